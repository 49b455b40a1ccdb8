//! Lab tool (no GPU needed, NVRTC only): compiles one polynomial-kernel specialisation for
//! sm_90 and writes its CUBIN, for `nvdisasm` instruction counts (bench/gpu_lab/sass.sh).
//!
//! `cargo run --release -p pwpa-cuda --example cubin -- OUT.cubin [key=value ...]`
//! keys: degree, arbitrary, lt, rt, lxd, rxd, compact, grad, taillut, full_lut, full_mid, lean, lean_window, smem_rec, smem_idx, min_blocks, wsub, gw, repl, replt, swz, crepl, anchors,
//! unroll, x (f32|f16|bf16), y, arch (sm_XX's number, 90 unless given). The defaults are the exp table's kernel (one piece of
//! degree 3, exp2 tails on both sides, gathered tails, tickets per block).
use pwpa::DType;
use pwpa_cuda::{compile, KernelSpec};

fn dtype(s: &str) -> DType {
    match s {
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        _ => DType::F32,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: cubin OUT.cubin [key=value ...]");
        std::process::exit(2);
    };
    let mut s = KernelSpec {
        x_dtype: DType::F32,
        y_dtype: DType::F32,
        degree: 3,
        arbitrary: true,
        tails: (3, 3, 2, 2),
        fused: None,
        smem_rec: true,
        anchors: true,
        anchors2: true,
        smem_idx: true,
        unroll: 4,
        block: 1024,
        repl: 8,
        replt: 16,
        swz: false,
        one_step: true,
        grid_ord: false,
        ord_pos: false,
        crepl: 16,
        grad: false,
        compact: true,
        taillut: false,
        full_lut: false,
        full_mid: false,
        lean: false,
        lean_window: false,
        min_blocks: 1,
        wsub: 0,
        gw: 1,
        tile_grid: false,
        fast_group: false,
    };
    let mut arch = 90u32;
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            eprintln!("not key=value: {a}");
            std::process::exit(2);
        };
        let n = || -> u32 {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{k}: not a number: {v}");
                std::process::exit(2)
            })
        };
        match k {
            "degree" => s.degree = n(),
            "arbitrary" => s.arbitrary = n() != 0,
            "lt" => s.tails.0 = n(),
            "rt" => s.tails.1 = n(),
            "lxd" => s.tails.2 = n(),
            "rxd" => s.tails.3 = n(),
            "compact" => s.compact = n() != 0,
            "grad" => s.grad = n() != 0,
            "taillut" => s.taillut = n() != 0,
            "full_lut" => s.full_lut = n() != 0,
            "full_mid" => s.full_mid = n() != 0,
            "lean" => s.lean = n() != 0,
            "lean_window" => s.lean_window = n() != 0,
            "smem_rec" => s.smem_rec = n() != 0,
            "smem_idx" => s.smem_idx = n() != 0,
            "min_blocks" => s.min_blocks = n(),
            "wsub" => s.wsub = n(),
            "gw" => s.gw = n(),
            "block" => s.block = n(),
            "grid_ord" => s.grid_ord = n() != 0,
            "ord_pos" => s.ord_pos = n() != 0,
            "one_step" => s.one_step = n() != 0,
            "fast_group" => s.fast_group = n() != 0,
            "repl" => s.repl = n(),
            "replt" => s.replt = n(),
            "swz" => s.swz = n() != 0,
            "crepl" => s.crepl = n(),
            "anchors" => s.anchors = n() != 0,
            "unroll" => s.unroll = n(),
            "arch" => arch = n(),
            "x" => s.x_dtype = dtype(v),
            "y" => s.y_dtype = dtype(v),
            _ => {
                eprintln!("unknown key {k}");
                std::process::exit(2);
            }
        }
    }
    let opts: Vec<String> = [
        format!("--gpu-architecture=sm_{arch}"),
        "--fmad=false".into(),
        "--std=c++17".into(),
        "--ptxas-options=-v".into(),
    ]
    .to_vec();
    match compile::compile("pwpa_eval", &s.source(), &opts, true) {
        Ok(c) => {
            eprint!("{}", c.log);
            if let Err(e) = std::fs::write(&out, &c.image) {
                eprintln!("{out}: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
