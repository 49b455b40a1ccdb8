//! GPU tests: bit-identical to the CPU oracle, layouts and sizes, fused derivative,
//! the seed variants, the module cache, and bad input. Each test prints
//! "no CUDA driver: skipping GPU test" and passes on machines without a GPU.

mod common;

use common::{backend, random_inputs, random_table, Rng};
use pwpa::{bf16, f16, DType, Element, Table};
use pwpa_cuda::{CudaBackend, CudaTable, DeviceBuffer, Error, KernelChoice};

fn assert_bits<U: Element>(t: &Table, xs: &[f32], got: &[U], what: &str) {
    for (i, (&x, &g)) in xs.iter().zip(got).enumerate() {
        let want: U = t.eval(x);
        assert_eq!(
            g.to_bits_u32(),
            want.to_bits_u32(),
            "{what}: element {i}, x = {x:e} (bits {:08x}), got {:?} want {:?}; table P={} D={} tails {}/{} {}",
            x.to_bits(),
            g,
            want,
            t.partitions(),
            t.degree(),
            t.left_tail().kind(),
            t.right_tail().kind(),
            if t.breakpoints().is_uniform() { "uniform" } else { "arbitrary" }
        );
    }
}

/// Tables covering both breakpoint kinds, D = 0..15 and every tail kind.
fn tables(seed: u64, count: usize) -> Vec<Table> {
    // PWPA_GPU_TEST_QUICK: fewer tables (for compute-sanitizer runs).
    let count = if std::env::var_os("PWPA_GPU_TEST_QUICK").is_some() {
        count.min(5)
    } else {
        count
    };
    let mut r = Rng(seed);
    (0..count)
        .map(|k| {
            let arbitrary = k % 2 == 1;
            let degree = k % 16;
            let p = [1usize, 2, 7, 32, 200, 1024, 4096][r.below(7)];
            random_table(&mut r, arbitrary, p, degree, k % 5, (k / 5) % 5)
        })
        .collect()
}

/// Every input of one 16-bit type, through the result-table kernel (auto) and the
/// polynomial kernel (forced), to both 16-bit types and to f32.
fn check_exhaustive16<T: Element>(
    b: &std::sync::Arc<CudaBackend>,
    t: &Table,
    all: &[T],
    xs32: &[f32],
) {
    let mut ct = CudaTable::new(b, t).unwrap();
    for kernel in [KernelChoice::Auto, KernelChoice::Poly] {
        ct.set_kernel(kernel);
        let k = kernel.name();
        if kernel == KernelChoice::Auto {
            assert_eq!(
                ct.uses_lut(T::DTYPE, T::DTYPE),
                b.shared_memory_optin() >= pwpa_cuda::LUT_BYTES
            );
        } else {
            assert!(!ct.uses_lut(T::DTYPE, T::DTYPE));
        }
        let y: Vec<T> = ct.eval_host(all).unwrap();
        assert_bits(t, xs32, &y, &format!("{k}: {}->{}", T::DTYPE, T::DTYPE));
        let y: Vec<bf16> = ct.eval_host(all).unwrap();
        assert_bits(t, xs32, &y, &format!("{k}: {}->bf16", T::DTYPE));
        let y: Vec<f16> = ct.eval_host(all).unwrap();
        assert_bits(t, xs32, &y, &format!("{k}: {}->f16", T::DTYPE));
        let y32: Vec<f32> = ct.eval_host(all).unwrap();
        assert_bits(t, xs32, &y32, &format!("{k}: {}->f32", T::DTYPE));
    }
}

#[test]
fn every_bf16_and_f16_input_matches_cpu() {
    let Some(b) = backend() else { return };
    let bfs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let hfs: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let bx: Vec<f32> = bfs.iter().map(|v| v.to_f32()).collect();
    let hx: Vec<f32> = hfs.iter().map(|v| v.to_f32()).collect();
    for t in tables(1, 40) {
        check_exhaustive16(&b, &t, &bfs, &bx);
        check_exhaustive16(&b, &t, &hfs, &hx);
    }
}

#[test]
fn random_f32_inputs_match_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(7);
    for t in tables(2, 48) {
        let xs = random_inputs(&mut r, &t, 1 << 16);
        let ct = CudaTable::new(&b, &t).unwrap();
        let y: Vec<f32> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, "f32->f32");
        let y: Vec<bf16> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, "f32->bf16");
        let y: Vec<f16> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, "f32->f16");
    }
}

/// Log breakpoints (`pwpa::Breakpoints::log`: equal power-of-two steps of f32 bit patterns
/// on a positive range, the CPU set's reciprocal, rsqrt, sqrt and log tables): the
/// ordered-key grid on the device, bit for bit against the CPU oracle, f32 inputs (random,
/// specials, every breakpoint's neighbours) to f32 and bf16, and every bf16 and f16 input
/// for the catalogue-like table. Added in session 30, when no device time was left: not yet
/// run on a GPU.
#[test]
fn log_breakpoint_tables_match_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(31);
    let cases: [(f32, f32, usize, usize); 5] = [
        (0.015625, 64.0, 24, 4),
        (0.015625, 64.0, 48, 3),
        (1e-3, 6e4, 130, 2),
        (f32::from_bits(1), 1e-30, 17, 3),
        (1e-20, f32::MAX, 600, 1),
    ];
    for (k, (lo, hi, p, d)) in cases.into_iter().enumerate() {
        let bps = pwpa::Breakpoints::log(lo, hi, p).unwrap();
        assert!(bps.log_shift().is_some());
        let np = bps.partitions();
        let anchors = Table::midpoint_anchors(&bps);
        let coeffs = (0..np * (d + 1))
            .map(|_| r.range(-2.0, 2.0) as f32)
            .collect();
        let left = pwpa::Tail::Constant {
            value: f32::INFINITY,
        };
        let right = [pwpa::Tail::Extend, pwpa::Tail::Clamp][k % 2].clone();
        let t = Table::new(bps, d, anchors, coeffs, left, right).unwrap();
        let ct = CudaTable::new(&b, &t).unwrap();
        let mut xs = random_inputs(&mut r, &t, 1 << 16);
        xs.extend(common::special_inputs(&t));
        for x in xs.iter_mut().step_by(3) {
            *x = r.range(lo as f64 * 0.5, (hi as f64).min(1e38) * 1.5) as f32;
        }
        let what = format!("log breakpoints [{lo:e}, {hi:e}] P={np} D={d}");
        let y: Vec<f32> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, &format!("{what}, f32->f32"));
        let y: Vec<bf16> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, &format!("{what}, f32->bf16"));
        if k == 0 {
            let bfs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
            let hfs: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
            let bx: Vec<f32> = bfs.iter().map(|v| v.to_f32()).collect();
            let hx: Vec<f32> = hfs.iter().map(|v| v.to_f32()).collect();
            check_exhaustive16(&b, &t, &bfs, &bx);
            check_exhaustive16(&b, &t, &hfs, &hx);
        }
    }
}

/// Launches that depend on each other, queued on one stream without a host wait: each
/// reads the previous launch's output, and some overwrite a buffer that the launch before
/// them read. With programmatic dependent launch (kernels/pdl.cuh: a kernel may start, and
/// stage its table, before the previous one ends) a read or write before `pdl_wait()`
/// would see or clobber the wrong data. f32 kernels, the 16-bit result-table kernel and
/// the mixed-size ones alternate; every stage is checked bit for bit against the CPU
/// oracle applied in the same order.
#[test]
fn dependent_launches_on_one_stream_match_cpu() {
    let Some(b) = backend() else { return };
    eprintln!(
        "sm_{}: programmatic dependent launch {}",
        b.arch(),
        if b.uses_pdl() { "on" } else { "off" }
    );
    if b.arch() >= 90 && std::env::var_os("PWPA_CUDA_PDL").is_none() {
        assert!(
            b.uses_pdl(),
            "sm_90+ with a CUDA 12.3+ driver launches with PDL"
        );
    }
    let mut r = Rng(29);
    let quick = std::env::var_os("PWPA_GPU_TEST_QUICK").is_some();
    let n = if quick { (1 << 16) + 3 } else { (1 << 22) + 5 };
    // Clamp tails keep every stage's values finite and inside the next table's range.
    let ts: Vec<Table> = (0..6)
        .map(|k| {
            random_table(
                &mut r,
                k % 2 == 1,
                [7usize, 256, 1024][k % 3],
                1 + k % 5,
                0,
                0,
            )
        })
        .collect();
    let cts: Vec<CudaTable> = ts.iter().map(|t| CudaTable::new(&b, t).unwrap()).collect();
    let x: Vec<f32> = (0..n).map(|_| r.range(-12.0, 12.0) as f32).collect();
    let xb = DeviceBuffer::from_slice(&b, &x).unwrap();
    let f1 = DeviceBuffer::new(&b, 4 * n).unwrap();
    let f2 = DeviceBuffer::new(&b, 4 * n).unwrap();
    let h1 = DeviceBuffer::new(&b, 2 * n).unwrap();
    let h2 = DeviceBuffer::new(&b, 2 * n).unwrap();
    // (table, input, its dtype, output, its dtype): x -> f1 -> f2 -> h1 -> h2 -> h1 (h1
    // was read by the launch before) -> f1 (read two launches before) -> f2 -> h2.
    let f32t = DType::F32;
    let bf = DType::BF16;
    let chain = [
        (0, &xb, f32t, &f1, f32t),
        (1, &f1, f32t, &f2, f32t),
        (2, &f2, f32t, &h1, bf),
        (3, &h1, bf, &h2, bf),
        (4, &h2, bf, &h1, bf),
        (5, &h1, bf, &f1, f32t),
        (0, &f1, f32t, &f2, f32t),
        (3, &f2, f32t, &h2, bf),
    ];
    for round in 0..3 {
        for &(k, src, sd, dst, dd) in &chain {
            // SAFETY: every buffer holds n elements of its dtype.
            unsafe { cts[k].eval_raw(src.ptr(), dst.ptr(), n, sd, dd, 0).unwrap() };
        }
        b.synchronize().unwrap();
        // The CPU, stage by stage, on the values the previous stage produced.
        let mut cur: Vec<f32> = x.clone();
        for (stage, &(k, _, sd, dst, dd)) in chain.iter().enumerate() {
            let t = &ts[k];
            let want: Vec<f32> = cur
                .iter()
                .map(|&v| match (sd == bf, dd == bf) {
                    (false, false) => t.eval::<f32, f32>(v),
                    (false, true) => t.eval::<f32, bf16>(v).to_f32(),
                    (true, false) => t.eval::<bf16, f32>(bf16::from_f32(v)),
                    (true, true) => t.eval::<bf16, bf16>(bf16::from_f32(v)).to_f32(),
                })
                .collect();
            // Only the last write of each buffer survives; check the stages whose output
            // is not overwritten later in the chain.
            let later = chain[stage + 1..].iter().any(|c| std::ptr::eq(c.3, dst));
            if !later {
                let got: Vec<f32> = if dd == bf {
                    let mut o = vec![bf16::from_bits(0); n];
                    dst.download(0, &mut o).unwrap();
                    o.iter().map(|v| v.to_f32()).collect()
                } else {
                    let mut o = vec![0f32; n];
                    dst.download(0, &mut o).unwrap();
                    o
                };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        w.to_bits(),
                        "round {round}, stage {stage} (table {k}, {dd} out): element {i}"
                    );
                }
            }
            cur = want;
        }
    }
}

/// Tables with exp2 tails on inputs whose share in a tail runs from none to all, in
/// segments: the f32 kernel gathers a warp's tail elements when up to half its tile is in a
/// tail and goes chunk by chunk otherwise, so every share exercises one path or the other
/// (and the boundary between them).
#[test]
fn exp2_tail_shares_from_none_to_all_match_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(11);
    let quick = std::env::var_os("PWPA_GPU_TEST_QUICK").is_some();
    let (count, seg) = if quick { (2, 1 << 12) } else { (6, 1 << 15) };
    for k in 0..count {
        // An exp2 tail on the left, and on the right for every other table.
        let rk = if k % 2 == 0 { 4 } else { k % 4 };
        let t = random_table(&mut r, k % 3 == 1, [7, 256, 1024][k % 3], 3 + k % 4, 4, rk);
        let lo = t.breakpoints().lo() as f64;
        let hi = t.breakpoints().hi() as f64;
        let w = hi - lo;
        let mut xs = Vec::with_capacity(17 * seg);
        for share in 0..=16 {
            for _ in 0..seg {
                let x = if r.below(16) < share {
                    if rk == 4 && r.below(2) == 0 {
                        r.range(hi, hi + 2.0 * w)
                    } else {
                        r.range(lo - 2.0 * w, lo)
                    }
                } else {
                    r.range(lo, hi)
                };
                xs.push(x as f32);
            }
        }
        let ct = CudaTable::new(&b, &t).unwrap();
        let y: Vec<f32> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, "f32->f32, exp2-tail shares");
        let y: Vec<bf16> = ct.eval_host(&xs).unwrap();
        assert_bits(&t, &xs, &y, "f32->bf16, exp2-tail shares");
    }
}

/// The f32 forward pass of light tables on devices of at most 4 TB/s (an H100): one taker
/// per tile (no persistent grid) where the staged table is small, beside a table with an
/// exp2 tail near zero, which keeps compaction and the persistent grid. Checks that the host
/// chooses the shape there (a rule that stopped choosing it would leave it untested) and
/// that each is bit-identical to the CPU at sizes from one partial tile to many waves of
/// blocks. On devices above 4 TB/s (an H200) it checks their shapes instead: the light
/// arbitrary tables, log-spaced (the ordered-key grid) or not, in blocks of 512 threads
/// with one-step tiles per 16 warps.
#[test]
fn tile_grid_launch_matches_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(23);
    let h100_rules = b.peak_bandwidth() <= 4.0e12;
    // gpu_run.sh runs this test a second time with the fast-memory devices' small-table
    // launch shape forced on every table (blocks of 512, one-step tiles per 16 warps), so
    // that it is checked against the CPU on any device.
    let tuning = [
        "PWPA_CUDA_BLOCK",
        "PWPA_CUDA_WSUB",
        "PWPA_CUDA_GW",
        "PWPA_CUDA_IOH",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    // Random tables of range within [-3.5, 3.5], arbitrary ones with pieces of similar
    // widths (not log-spaced: those take another lookup, and a persistent grid).
    let mut near = |arbitrary: bool, p: usize| loop {
        let t = random_table(&mut r, arbitrary, p, 3, 3, 3);
        let bp = t.breakpoints();
        let widths: Vec<f64> = (0..bp.partitions())
            .map(|i| bp.point(i + 1) - bp.point(i))
            .collect();
        let spread = widths.iter().fold(0f64, |a, &v| a.max(v))
            / widths.iter().fold(f64::MAX, |a, &v| a.min(v));
        if bp.lo() > -3.5 && bp.hi() < 3.5 && bp.is_uniform() != arbitrary && spread < 10.0 {
            break t;
        }
    };
    let gelu_like = near(true, 23);
    let lo = gelu_like.breakpoints().lo();
    let exp2 = pwpa::Tail::Exp2 {
        negative: false,
        anchor: lo,
        coeffs: vec![std::f32::consts::LOG2_E, -0.1],
    };
    let lin = pwpa::Tail::Linear {
        slope: 1.0,
        intercept: 0.0,
    };
    // Log-spaced breakpoints (as reciprocal, rsqrt and log tables have), with constant tails:
    // the ordered-key lookup grid.
    // One from a positive first breakpoint (the kernel's keys are then the bit patterns),
    // one mirrored around 0. (The mirrored one's grid spans the keys from -z to z, with
    // cells as fine as its pieces, at least 525 cells for 27 pieces: it stages more than
    // two blocks of a multiprocessor can, 147 KB on an H200 on 2026-11-28, and keeps
    // tickets per warp there.)
    let mut r2 = Rng(29);
    let mut log_spaced = |positive: bool| loop {
        let t = random_table(&mut r2, true, 27, 3, 0, 0);
        let ct = CudaTable::new(&b, &t).unwrap();
        let spec = ct.spec(DType::F32, DType::F32, None, false).0;
        if spec.grid_ord && spec.ord_pos == positive {
            assert_eq!(positive, t.breakpoints().lo() >= 0.0, "{spec:?}");
            break t;
        }
    };
    // (what, table, light: no compaction, ordered-key grid)
    let cases = [
        ("light uniform table", near(false, 16), true, false),
        ("light arbitrary table", near(true, 16), true, false),
        (
            "exp2 and linear tails (compaction)",
            gelu_like.with_tails(exp2, lin).unwrap(),
            false,
            false,
        ),
        (
            "log-spaced table (ordered-key grid)",
            log_spaced(true),
            true,
            true,
        ),
        (
            "log-spaced table mirrored around 0 (ordered-key grid)",
            log_spaced(false),
            true,
            true,
        ),
    ];
    let mut grid_launches = 0;
    for (what, t, light, ord) in cases {
        let ct = CudaTable::new(&b, &t).unwrap();
        let (spec, smem) = ct.spec(DType::F32, DType::F32, None, false);
        eprintln!("{what}: {smem} B of shared memory, {}", spec.describe());
        grid_launches += spec.tile_grid as usize;
        assert_eq!(spec.grid_ord, ord, "{what}: {spec:?}");
        if tuning {
            eprintln!("{what}: launch shape set by PWPA_CUDA_BLOCK/WSUB/GW/IOH, rules not checked");
        } else if h100_rules {
            let ok = if ord {
                // A persistent grid and evict-first stores.
                !spec.tile_grid && !spec.compact && spec.io_hints() == 4
            } else if light {
                spec.tile_grid == (smem <= pwpa_cuda::TILE_GRID_SMEM) && !spec.compact
            } else {
                spec.compact && !spec.tile_grid
            };
            assert!(ok, "{what}: {spec:?}");
        } else {
            // Above 4 TB/s: a persistent grid; the light arbitrary tables take one-step
            // tiles per 16-warp block of 512 threads (the log-spaced ones with plain
            // stores) where two blocks fit on a multiprocessor (all but the mirrored
            // log-spaced one, see above), the light uniform one tickets per block,
            // compaction and the rest tickets per warp (4 steps) in blocks of 1024.
            let uniform = t.breakpoints().is_uniform();
            let (block, wsub, gw) = if spec.fast_group {
                (512, 1, 16)
            } else if light && uniform {
                (1024, 0, 1)
            } else {
                (1024, 4, 1)
            };
            // (The mirrored table's launch depends on its staging: either, consistently.)
            let mirrored = ord && !spec.ord_pos;
            let stcs = spec.compact || (ord && !spec.fast_group);
            let ok = !spec.tile_grid
                && spec.compact != light
                && (spec.block, spec.wsub, spec.gw) == (block, wsub, gw)
                && (mirrored || spec.fast_group == (light && !uniform))
                && spec.io_hints() == if stcs { 4 } else { 0 };
            assert!(ok, "{what} on a device above 4 TB/s: {spec:?}");
        }
        let (lo, hi) = (t.breakpoints().lo() as f64, t.breakpoints().hi() as f64);
        let w = hi - lo;
        for n in [1usize, 37, 4096 * 4 + 3, 1 << 20, 3_000_017] {
            let mut xs = random_inputs(&mut r, &t, n);
            // Half the inputs spread over the tails and the breakpoints' range.
            for x in xs.iter_mut().step_by(2) {
                *x = r.range(lo - 3.0 * w - 8.0, hi + 3.0 * w + 8.0) as f32;
            }
            let y: Vec<f32> = ct.eval_host(&xs).unwrap();
            assert_bits(&t, &xs, &y, &format!("{what}, n = {n}, f32->f32"));
            let y: Vec<bf16> = ct.eval_host(&xs).unwrap();
            assert_bits(&t, &xs, &y, &format!("{what}, n = {n}, f32->bf16"));
        }
    }
    // The uniform table stages a few KB: it takes one taker per tile at least.
    assert!(
        !h100_rules || grid_launches >= 1,
        "no table took one taker per tile"
    );
}

/// 10^8 random f32 inputs (incl. specials) per table kind; release builds only (gpu_check.sh).
#[test]
#[ignore]
fn hundred_million_random_f32_match_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(11);
    let n = 100_000_000usize;
    for (k, t) in tables(3, 4).into_iter().enumerate() {
        let xs = random_inputs(&mut r, &t, n);
        let ct = CudaTable::new(&b, &t).unwrap();
        let y: Vec<f32> = ct.eval_host(&xs).unwrap();
        let bad = xs
            .iter()
            .zip(&y)
            .position(|(&x, &g)| <f32 as Element>::to_bits_u32(t.eval(x)) != g.to_bits());
        assert!(bad.is_none(), "table {k}: first mismatch at {bad:?}");
        eprintln!("table {k}: {n} f32 inputs bit-identical");
    }
}

/// `n` 16-bit inputs (`xs`, uploaded as `xb`) from element `xo` to f32 outputs in `yb`
/// from element `yo`, against the CPU; returns the inputs' values.
fn check_16_to_f32<T: Element>(
    ct: &CudaTable,
    t: &Table,
    xb: &DeviceBuffer,
    xs: &[T],
    yb: &DeviceBuffer,
    (xo, yo, n): (usize, usize, usize),
) -> Vec<f32> {
    // SAFETY: xb holds xs (at least xo + n elements), yb at least yo + n f32.
    unsafe {
        ct.eval_raw(
            xb.ptr() + 2 * xo as u64,
            yb.ptr() + 4 * yo as u64,
            n,
            T::DTYPE,
            DType::F32,
            0,
        )
        .unwrap()
    };
    ct.backend().synchronize().unwrap();
    let mut out = vec![0f32; yo + n];
    yb.download(0, &mut out).unwrap();
    let xf: Vec<f32> = xs[xo..xo + n].iter().map(|v| v.to_f32()).collect();
    assert_bits(t, &xf, &out[yo..], &format!("offset {}->f32", T::DTYPE));
    xf
}

#[test]
fn odd_sizes_unaligned_offsets_and_in_place() {
    let Some(b) = backend() else { return };
    let mut r = Rng(5);
    for t in tables(4, 6) {
        let ct = CudaTable::new(&b, &t).unwrap();
        let mut ct_poly = CudaTable::new(&b, &t).unwrap();
        ct_poly.set_kernel(KernelChoice::Poly);
        let xs = random_inputs(&mut r, &t, 5000);
        let bx: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
        for &n in &[1usize, 3, 7, 8, 9, 15, 16, 17, 63, 1000, 4093] {
            for (xo, yo) in [(0usize, 0usize), (1, 0), (0, 1), (3, 3), (5, 2), (7, 7)] {
                // f32 → f32 at element offsets
                let xb = DeviceBuffer::from_slice(&b, &xs[..n + 8]).unwrap();
                let yb = DeviceBuffer::new(&b, (n + 8) * 4).unwrap();
                yb.fill(0xAB).unwrap();
                unsafe {
                    ct.eval_raw(
                        xb.ptr() + 4 * xo as u64,
                        yb.ptr() + 4 * yo as u64,
                        n,
                        DType::F32,
                        DType::F32,
                        0,
                    )
                    .unwrap()
                };
                let mut out = vec![0f32; n + 8];
                b.synchronize().unwrap();
                yb.download(0, &mut out).unwrap();
                assert_bits(&t, &xs[xo..xo + n], &out[yo..yo + n], "offset f32");
                for (i, v) in out.iter().enumerate() {
                    if i < yo || i >= yo + n {
                        assert_eq!(v.to_bits(), 0xABAB_ABAB, "write outside the output at {i}");
                    }
                }
                // bf16 → f32 (mixed sizes), and f16 → f32 (its pattern from the input, not
                // from the value)
                let xb = DeviceBuffer::from_slice(&b, &bx[..n + 8]).unwrap();
                let xf = check_16_to_f32(&ct, &t, &xb, &bx, &yb, (xo, yo, n));
                let hx: Vec<f16> = xs[..n + 8].iter().map(|&v| f16::from_f32(v)).collect();
                let hb = DeviceBuffer::from_slice(&b, &hx).unwrap();
                check_16_to_f32(&ct, &t, &hb, &hx, &yb, (xo, yo, n));
                // bf16 → bf16 and bf16 → f16 (the result-table kernel by default), with a
                // guard pattern around the output.
                for kernel in [KernelChoice::Auto, KernelChoice::Poly] {
                    let ct = if kernel == KernelChoice::Poly {
                        &ct_poly
                    } else {
                        &ct
                    };
                    for y_dtype in [DType::BF16, DType::F16] {
                        let yb = DeviceBuffer::new(&b, (n + 8) * 2).unwrap();
                        yb.fill(0xAB).unwrap();
                        unsafe {
                            ct.eval_raw(
                                xb.ptr() + 2 * xo as u64,
                                yb.ptr() + 2 * yo as u64,
                                n,
                                DType::BF16,
                                y_dtype,
                                0,
                            )
                            .unwrap()
                        };
                        b.synchronize().unwrap();
                        let mut out = vec![0u16; n + 8];
                        yb.download(0, &mut out).unwrap();
                        for (i, &v) in out.iter().enumerate() {
                            if i < yo || i >= yo + n {
                                assert_eq!(
                                    v, 0xABAB,
                                    "{kernel:?}: write outside the output at {i}"
                                );
                            }
                        }
                        let what =
                            format!("{kernel:?} offset bf16->{y_dtype} (x+{xo}, y+{yo}, n {n})");
                        if y_dtype == DType::BF16 {
                            let got: Vec<bf16> = out.iter().map(|&h| bf16::from_bits(h)).collect();
                            assert_bits(&t, &xf, &got[yo..yo + n], &what);
                        } else {
                            let got: Vec<f16> = out.iter().map(|&h| f16::from_bits(h)).collect();
                            assert_bits(&t, &xf, &got[yo..yo + n], &what);
                        }
                    }
                }
            }
            // in place, bf16 (the result-table kernel by default)
            assert_eq!(
                ct.uses_lut(DType::BF16, DType::BF16),
                ct.kernel() != KernelChoice::Poly
                    && b.shared_memory_optin() >= pwpa_cuda::LUT_BYTES
            );
            let buf = DeviceBuffer::from_slice(&b, &bx[..n + 1]).unwrap();
            unsafe {
                ct.eval_raw(buf.ptr() + 2, buf.ptr() + 2, n, DType::BF16, DType::BF16, 0)
                    .unwrap()
            };
            b.synchronize().unwrap();
            let mut out = vec![bf16::ZERO; n + 1];
            buf.download(0, &mut out).unwrap();
            let xf: Vec<f32> = bx[1..n + 1].iter().map(|v| v.to_f32()).collect();
            assert_bits(&t, &xf, &out[1..], "in place bf16");
            assert_eq!(out[0], bx[0]);
        }
    }
}

#[test]
fn fused_derivative_matches_two_cpu_evaluations() {
    let Some(b) = backend() else { return };
    let mut r = Rng(9);
    let mut checked = 0;
    for t in tables(6, 30) {
        let d = match t.derivative() {
            Ok(d) => d,
            Err(_) => {
                // exp2 tails: any second table on the same breakpoints is a valid partner.
                let mut rr = Rng(r.next());
                let k = random_table(
                    &mut rr,
                    !t.breakpoints().is_uniform(),
                    1,
                    t.degree().saturating_sub(1),
                    4,
                    4,
                );
                let p = t.partitions();
                let nd = k.degree();
                Table::new(
                    t.breakpoints().clone(),
                    nd,
                    t.anchors().to_vec(),
                    (0..p * (nd + 1))
                        .map(|_| rr.range(-1.0, 1.0) as f32)
                        .collect(),
                    k.left_tail().clone(),
                    k.right_tail().clone(),
                )
                .unwrap()
            }
        };
        let ct = CudaTable::new(&b, &t).unwrap();
        let cd = CudaTable::new(&b, &d).unwrap();
        let xs = random_inputs(&mut r, &t, 20_000);
        let (y, dy): (Vec<f32>, Vec<f32>) = ct.eval_with_derivative_host(&cd, &xs).unwrap();
        assert_bits(&t, &xs, &y, "fused y");
        assert_bits(&d, &xs, &dy, "fused dy");
        let bx: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let xf: Vec<f32> = bx.iter().map(|v| v.to_f32()).collect();
        let (y, dy): (Vec<bf16>, Vec<bf16>) = ct.eval_with_derivative_host(&cd, &bx).unwrap();
        assert_bits(&t, &xf, &y, "fused y bf16");
        assert_bits(&d, &xf, &dy, "fused dy bf16");
        checked += 1;
    }
    assert!(checked >= 5);
}

/// Gradients with specials (NaN, ±Inf, ±0, subnormals) among ordinary values.
fn random_grads<G: Element>(r: &mut Rng, n: usize) -> Vec<G> {
    (0..n)
        .map(|k| match k % 40 {
            0 => G::from_f32(f32::NAN),
            1 => G::from_f32(f32::NEG_INFINITY),
            2 => G::from_f32(-0.0),
            3 => G::from_f32(1e-41),
            4 => G::from_f32(f32::from_bits(r.next() as u32)),
            _ => G::from_f32(r.range(-3.0, 3.0) as f32),
        })
        .collect()
}

/// One backward pass on the GPU against the CPU's `Evaluator::grad_mul` and the oracle.
fn check_grad<T: Element, G: Element>(ct: &CudaTable, t: &Table, xs: &[T], gs: &[G], what: &str) {
    let got: Vec<G> = ct.grad_mul_host(xs, gs).unwrap();
    let mut cpu = vec![G::from_f32(0.0); xs.len()];
    pwpa::eval::Evaluator::new(t)
        .grad_mul(xs, gs, &mut cpu)
        .unwrap();
    for (i, ((&x, &g), (&y, &c))) in xs.iter().zip(gs).zip(got.iter().zip(&cpu)).enumerate() {
        let want: G = t.grad_mul(x, g);
        assert_eq!(
            c.to_bits_u32(),
            want.to_bits_u32(),
            "{what}: CPU fast path at {i}"
        );
        assert_eq!(
            y.to_bits_u32(),
            want.to_bits_u32(),
            "{what}: element {i}, x = {x:?}, g = {g:?}: GPU {y:?}, CPU {want:?}; table P={} D={} tails {}/{}",
            t.partitions(),
            t.degree(),
            t.left_tail().kind(),
            t.right_tail().kind(),
        );
    }
}

#[test]
fn backward_grad_mul_matches_cpu() {
    let Some(b) = backend() else { return };
    let mut r = Rng(77);
    let mut checked = 0;
    let mut full = 0;
    let mut mid = 0;
    let mut lean16 = 0;
    // And a table of finite results with nearly every f16 input on [-16, 16] its own
    // result (~150 KB: one block per multiprocessor, where f16 takes LEAN).
    let b16 = pwpa::Breakpoints::uniform(-16.0, 16.0, 64).unwrap();
    let c16: Vec<f32> = (0..64 * 4)
        .map(|k| [0.011, -0.023, 0.31, 0.5][k % 4] * (1.0 + (k / 4) as f32 / 64.0))
        .collect();
    let constant = |value: f32| pwpa::Tail::Constant { value };
    let big16 = Table::new(
        b16.clone(),
        3,
        Table::midpoint_anchors(&b16),
        c16,
        constant(-0.25),
        constant(2.0),
    )
    .unwrap();
    // And one whose f16 results around 0 are one long run (a constant middle piece), cut
    // to one entry (FULLLUT 2) since the whole table (~246 KB) does not fit, with ~32k
    // other results (~131 KB: one block): LEAN there only with PWPA_CUDA_LEAN=2 (for now).
    let mut pts: Vec<f32> = (-1..=15).rev().map(|e| -(2f32).powi(e)).collect();
    pts.extend((-1..=15).map(|e| (2f32).powi(e)));
    let bm = pwpa::Breakpoints::arbitrary(pts).unwrap();
    let cm: Vec<f32> = (0..bm.partitions())
        .flat_map(|i| {
            let w = (bm.point(i + 1) - bm.point(i)) as f32;
            if i == bm.partitions() / 2 {
                [0.0, 1.25]
            } else {
                [0.4 / w, 0.5 + 0.1 * i as f32]
            }
        })
        .collect();
    let mid16 = Table::new(
        bm.clone(),
        1,
        Table::midpoint_anchors(&bm),
        cm,
        constant(0.375),
        constant(4.5),
    )
    .unwrap();
    // And two whose results overflow to ±Inf far out (f32 linear tails of slope 1e36 from
    // x = ±16: x ≥ ~340 is out of f32's range), the rest finite: LEAN with the input
    // window (LEANW), on one side and on both.
    let lin = |slope: f32| pwpa::Tail::Linear {
        slope,
        intercept: 0.0,
    };
    let mk = |left, right| {
        Table::new(
            b16.clone(),
            3,
            Table::midpoint_anchors(&b16),
            (0..64 * 4)
                .map(|k| [0.013, -0.021, 0.29, 0.5][k % 4] * (1.0 - (k / 4) as f32 / 128.0))
                .collect(),
            left,
            right,
        )
        .unwrap()
    };
    let inf16 = mk(constant(-0.25), lin(1e36));
    let inf16b = mk(lin(1e36), lin(-1e36));
    for t in [&inf16, &inf16b] {
        assert!(t.eval_f32(1000.0).is_infinite() && t.eval_f32(300.0).is_finite());
    }
    assert!(inf16b.eval_f32(-1000.0).is_infinite() && inf16.eval_f32(-1000.0).is_finite());
    let mut lean_mid16 = 0;
    let mut lean_win16 = 0;
    for t in tables(8, 24)
        .into_iter()
        .chain([big16, mid16, inf16, inf16b])
    {
        let mut ct = CudaTable::new(&b, &t).unwrap();
        // Odd length: scalar head and tail around the vector region.
        let xs = random_inputs(&mut r, &t, 30_001);
        let g32: Vec<f32> = random_grads(&mut r, xs.len());
        check_grad(&ct, &t, &xs, &g32, "f32 x, f32 grad");
        let gb: Vec<bf16> = random_grads(&mut r, xs.len());
        check_grad(&ct, &t, &xs, &gb, "f32 x, bf16 grad");
        // 16-bit inputs: every input's result from shared memory where it fits (auto), and
        // the polynomial kernel (forced).
        for kernel in [KernelChoice::Auto, KernelChoice::Poly] {
            ct.set_kernel(kernel);
            let k = kernel.name();
            let spec = ct.spec(DType::BF16, DType::BF16, None, true).0;
            let uses_full = spec.full_lut;
            assert!(kernel == KernelChoice::Auto || !uses_full);
            full += uses_full as usize;
            // The middle run of tiny inputs cut to one entry (FULLLUT 2).
            mid += spec.full_mid as usize;
            // The short path for chunks without NaN inputs or non-finite gradients.
            assert!(!spec.lean || uses_full);
            let s16 = ct.spec(DType::F16, DType::F16, None, true).0;
            lean16 += s16.lean as usize;
            lean_mid16 += (s16.lean && s16.full_mid) as usize;
            assert!(!s16.lean_window || s16.lean);
            lean_win16 += s16.lean_window as usize;
            let bx: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
            let gb: Vec<bf16> = random_grads(&mut r, bx.len());
            check_grad(&ct, &t, &bx, &gb, &format!("{k}: every bf16 x, bf16 grad"));
            let hx: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
            let gh: Vec<f16> = random_grads(&mut r, hx.len());
            check_grad(&ct, &t, &hx, &gh, &format!("{k}: every f16 x, f16 grad"));
            let g32: Vec<f32> = random_grads(&mut r, hx.len());
            check_grad(&ct, &t, &hx, &g32, &format!("{k}: every f16 x, f32 grad"));
            let g32: Vec<f32> = random_grads(&mut r, bx.len());
            check_grad(&ct, &t, &bx, &g32, &format!("{k}: every bf16 x, f32 grad"));
        }
        checked += 1;
    }
    assert!(checked >= 5);
    assert!(full >= 2, "{full} of {checked} tables used the full table");
    assert!(mid >= 1, "{mid} of {full} full tables cut their middle run");
    // (PWPA_CUDA_LEAN=0 turns the short path off: scripts/gpu_run.sh checks that way too.)
    if std::env::var("PWPA_CUDA_LEAN").as_deref() != Ok("0") {
        assert!(lean16 >= 1, "{lean16} f16 full tables took the short path");
        assert!(
            lean_win16 >= 2,
            "{lean_win16} f16 tables with infinite results took the short path"
        );
    }
    if std::env::var("PWPA_CUDA_LEAN").as_deref() == Ok("2") {
        assert!(
            lean_mid16 >= 1,
            "no f16 table with a middle run cut took the short path"
        );
    } else {
        assert_eq!(lean_mid16, 0);
    }
    // Linear tails on both sides: nearly every input has its own result.
    let b2 = pwpa::Breakpoints::uniform(-3.0, 2.0, 16).unwrap();
    let coeffs: Vec<f32> = (0..16 * 3).map(|k| 0.25 - 0.01 * k as f32).collect();
    let lin = |slope: f32, intercept: f32| pwpa::Tail::Linear { slope, intercept };
    let t = Table::new(
        b2.clone(),
        2,
        Table::midpoint_anchors(&b2),
        coeffs,
        lin(0.5, -1.25),
        lin(-2.0, 3.5),
    )
    .unwrap();
    let ct = CudaTable::new(&b, &t).unwrap();
    // f16: every input its own result, too many for shared memory (the polynomial kernel);
    // bf16: the tiny inputs' results are one run, cut to one entry, and the rest fits.
    let s16 = ct.spec(DType::F16, DType::F16, None, true).0;
    assert!(!s16.full_lut);
    let sb = ct.spec(DType::BF16, DType::BF16, None, true).0;
    assert!(sb.full_lut && sb.full_mid);
    // Infinite results at ±Inf: every chunk through the NaN handling.
    assert!(!sb.lean);
    let bx: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let gb: Vec<bf16> = random_grads(&mut r, bx.len());
    check_grad(&ct, &t, &bx, &gb, "linear tails: every bf16 x, bf16 grad");
    let hx: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let g32: Vec<f32> = random_grads(&mut r, hx.len());
    check_grad(&ct, &t, &hx, &g32, "linear tails: every f16 x, f32 grad");

    // In place over the gradient, at an unaligned offset, and a length mismatch.
    let t = &tables(9, 4)[3];
    let ct = CudaTable::new(&b, t).unwrap();
    let n = 10_007;
    let xs: Vec<bf16> = random_inputs(&mut r, t, n)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let gs: Vec<bf16> = random_grads(&mut r, n);
    let xb = DeviceBuffer::from_slice(&b, &xs).unwrap();
    let gbuf = DeviceBuffer::new(&b, 2 * (n + 1)).unwrap();
    gbuf.upload(2, &gs).unwrap();
    // SAFETY: both buffers hold n elements from the offsets used.
    unsafe {
        ct.grad_mul_raw(
            xb.ptr(),
            gbuf.ptr() + 2,
            gbuf.ptr() + 2,
            n,
            DType::BF16,
            DType::BF16,
            0,
        )
        .unwrap()
    };
    b.synchronize().unwrap();
    let mut got = vec![bf16::ZERO; n];
    gbuf.download(2, &mut got).unwrap();
    for i in 0..n {
        let want: bf16 = t.grad_mul(xs[i], gs[i]);
        assert_eq!(got[i].to_bits(), want.to_bits(), "in place at {i}");
    }
    // SAFETY: the call is rejected before any launch (overlap).
    let e = unsafe {
        ct.grad_mul_raw(
            xb.ptr(),
            gbuf.ptr(),
            gbuf.ptr() + 2,
            n,
            DType::BF16,
            DType::BF16,
            0,
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::Overlap(_)), "{e}");
    let e = ct.grad_mul_host(&xs, &gs[1..]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
}

#[test]
fn seed_variants_match_pwpa_in_range() {
    let Some(b) = backend() else { return };
    let mut r = Rng(13);
    for (k, t) in tables(8, 8).into_iter().enumerate() {
        if t.breakpoints().is_uniform() || t.partitions() > 1024 {
            continue;
        }
        let st = pwpa_cuda::seed::SeedTable::new(&b, &t).unwrap();
        let lo = t.breakpoints().lo() as f64;
        let hi = t.breakpoints().hi() as f64;
        let mut xs: Vec<f32> = (0..10_000).map(|_| r.range(lo, hi) as f32).collect();
        xs.push(lo as f32);
        xs.push(hi as f32);
        let xb = DeviceBuffer::from_slice(&b, &xs).unwrap();
        let yb = DeviceBuffer::new(&b, xs.len() * 4).unwrap();
        for v in pwpa_cuda::seed::VARIANTS {
            yb.fill(0xFF).unwrap();
            match unsafe { st.run(v, xb.ptr(), yb.ptr(), xs.len(), 0) } {
                Ok(()) => {}
                Err(Error::Unsupported(..)) => continue,
                Err(e) => panic!("{v}: {e}"),
            }
            b.synchronize().unwrap();
            let mut out = vec![0f32; xs.len()];
            yb.download(0, &mut out).unwrap();
            assert_bits(&t, &xs, &out, &format!("seed {v} table {k}"));
        }
    }
}

#[test]
fn module_cache_round_trip() {
    let Some(_) = backend() else { return };
    let dir = std::env::temp_dir().join(format!("pwpa-cache-test-{}", std::process::id()));
    std::env::set_var("PWPA_CACHE_DIR", &dir);
    let t = random_table(&mut Rng(99), false, 8, 3, 0, 0);
    let b1 = CudaBackend::new(0).unwrap();
    // A spec nobody else compiles: a unique unroll/dtype mix.
    let ct = CudaTable::with_options(
        &b1,
        &t,
        pwpa_cuda::LaunchOptions {
            unroll: 8,
            blocks_per_sm: 3,
        },
    )
    .unwrap();
    let (spec, _) = ct.spec(DType::F16, DType::BF16, None, false);
    let s1 = b1.prepare(&spec).unwrap();
    assert_eq!(b1.prepare(&spec).unwrap(), pwpa_cuda::ModuleSource::Memory);
    let b2 = CudaBackend::new(0).unwrap();
    let s2 = b2.prepare(&spec).unwrap();
    assert_eq!(s2, pwpa_cuda::ModuleSource::Disk, "first was {s1:?}");
    assert!(std::fs::read_dir(dir.join("cuda")).unwrap().count() >= 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_reported() {
    let Some(b) = backend() else { return };
    let t = random_table(&mut Rng(1), true, 16, 3, 0, 1);
    let ct = CudaTable::new(&b, &t).unwrap();
    let xb = DeviceBuffer::new(&b, 4096).unwrap();
    let yb = DeviceBuffer::new(&b, 4096).unwrap();
    unsafe {
        assert!(matches!(
            ct.eval_raw(0, yb.ptr(), 8, DType::F32, DType::F32, 0),
            Err(Error::NullPointer(..))
        ));
        assert!(matches!(
            ct.eval_raw(xb.ptr(), 0, 8, DType::F32, DType::F32, 0),
            Err(Error::NullPointer(..))
        ));
        assert!(matches!(
            ct.eval_raw(xb.ptr() + 1, yb.ptr(), 8, DType::F32, DType::F32, 0),
            Err(Error::Misaligned { .. })
        ));
        assert!(matches!(
            ct.eval_raw(xb.ptr(), yb.ptr() + 2, 8, DType::F32, DType::F32, 0),
            Err(Error::Misaligned { .. })
        ));
        // Past the end of the allocation.
        let e = ct
            .eval_raw(xb.ptr(), yb.ptr(), 1025, DType::F32, DType::F32, 0)
            .unwrap_err();
        assert!(matches!(e, Error::BadPointer { .. }), "{e}");
        // A host address.
        let host = [0f32; 16];
        let e = ct
            .eval_raw(
                host.as_ptr() as u64,
                yb.ptr(),
                16,
                DType::F32,
                DType::F32,
                0,
            )
            .unwrap_err();
        assert!(matches!(e, Error::BadPointer { .. }), "{e}");
        // Overlaps.
        assert!(matches!(
            ct.eval_raw(xb.ptr(), xb.ptr() + 4, 8, DType::F32, DType::F32, 0),
            Err(Error::Overlap(..))
        ));
        assert!(matches!(
            ct.eval_raw(xb.ptr(), xb.ptr(), 8, DType::F32, DType::BF16, 0),
            Err(Error::Overlap(..))
        ));
        // n = 0 is a no-op, even with null pointers.
        ct.eval_raw(0, 0, 0, DType::F32, DType::F32, 0).unwrap();
    }
    // Length mismatch through the checked buffer API.
    let small = DeviceBuffer::new(&b, 400).unwrap();
    assert!(matches!(
        ct.eval_buffers(&xb, DType::F32, &small, DType::F32, 0),
        Err(Error::LengthMismatch {
            input: 1024,
            output: 100
        })
    ));
    // Derivative on other breakpoints.
    let other = CudaTable::new(&b, &random_table(&mut Rng(2), true, 16, 2, 0, 0)).unwrap();
    let e = ct
        .eval_with_derivative_host::<f32, f32>(&other, &[0.0])
        .unwrap_err();
    assert!(matches!(e, Error::DerivativeMismatch(..)), "{e}");
    // No such device.
    let e = CudaBackend::new(1000).unwrap_err();
    assert!(matches!(e, Error::NoDevice { ordinal: 1000, .. }), "{e}");
    assert!(e.to_string().contains("no CUDA device with ordinal 1000"));
    // Unknown seed variant.
    let st = pwpa_cuda::seed::SeedTable::new(&b, &t).unwrap();
    assert!(matches!(
        unsafe { st.run("nope", xb.ptr(), yb.ptr(), 8, 0) },
        Err(Error::UnknownVariant(..))
    ));
    b.synchronize().unwrap();
}

/// More than 2^31 elements (bf16, 4 GiB in + 4 GiB out): 64-bit indexing.
#[test]
#[ignore]
fn more_than_two_to_the_31_elements() {
    let Some(b) = backend() else { return };
    let (free, _) = b.context().mem_get_info().unwrap();
    if free < (9usize << 30) {
        eprintln!("only {free} bytes free: skipping the 2^31 test");
        return;
    }
    let t = random_table(&mut Rng(21), true, 64, 3, 1, 2);
    let ct = CudaTable::new(&b, &t).unwrap();
    // Default choice: the result-table kernel where the device has the shared memory.
    eprintln!(
        "2^31 test through the {} kernel",
        if ct.uses_lut(DType::BF16, DType::BF16) {
            "result-table"
        } else {
            "polynomial"
        }
    );
    let n = (1usize << 31) + 5;
    let xs: Vec<u16> = (0..n)
        .map(|e| (e as u32).wrapping_mul(40503) as u16)
        .collect();
    let lut: Vec<u16> = (0..=u16::MAX)
        .map(|h| t.eval::<bf16, bf16>(bf16::from_bits(h)).to_bits())
        .collect();
    let xb = DeviceBuffer::from_slice(&b, &xs).unwrap();
    let yb = DeviceBuffer::new(&b, 2 * n).unwrap();
    unsafe {
        ct.eval_raw(xb.ptr() + 2, yb.ptr(), n - 1, DType::BF16, DType::BF16, 0)
            .unwrap()
    };
    b.synchronize().unwrap();
    let mut out = vec![0u16; n];
    yb.download(0, &mut out).unwrap();
    for e in 0..n - 1 {
        assert_eq!(out[e], lut[xs[e + 1] as usize], "element {e}");
    }
    eprintln!("{} bf16 elements bit-identical", n - 1);
}
