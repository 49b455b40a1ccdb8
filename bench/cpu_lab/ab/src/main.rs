//! A/B of two builds of pwpa's CPU fast path in one process: interleaved rounds on a
//! cache-resident buffer (or a large one with `--n`), one thread (or rayon's pool with
//! `--parallel`), minimum and median time per element, in f32, bf16 or f16 (`--dtype`).
use std::hint::black_box;
use std::time::Instant;

// crates/pwpa/benches/common/lab.rs, copied here by ab.sh.
mod lab;

/// One evaluation, on buffers of the `--dtype` (as bytes, 4-aligned).
type EvalFn = Box<dyn Fn(&[u8], &mut [u8])>;

macro_rules! mk {
    ($k:ident, $t:expr, $dtype:expr, $par:expr) => {{
        use $k::eval::{Evaluator, Parallelism};
        use $k::{Breakpoints, Table, Tail};
        let t: &str = $t;
        let tab = if std::path::Path::new(t).exists() {
            $k::format::load(t).unwrap()
        } else {
            let f: Vec<&str> = t.split(':').collect();
            let (p, d): (usize, usize) = (f[0].parse().unwrap(), f[1].parse().unwrap());
            let b = if f.get(2) != Some(&"arbitrary") {
                Breakpoints::uniform(-8.0, 8.0, p).unwrap()
            } else {
                Breakpoints::arbitrary((0..=p).map(|i| { let u = -1.0 + 2.0 * i as f64 / p as f64; (8.0 * (2.0 * u).sinh() / 2f64.sinh()) as f32 }).collect()).unwrap()
            };
            let anchors = Table::midpoint_anchors(&b);
            let coeffs = (0..p * (d + 1)).map(|k| ((k * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
            Table::new(b, d, anchors, coeffs, Tail::Constant { value: 0.0 }, Tail::Linear { slope: 1.0, intercept: 0.0 }).unwrap()
        };
        let lohi = (tab.breakpoints().lo() as f64, tab.breakpoints().hi() as f64);
        let par = if $par { Parallelism::Rayon } else { Parallelism::Sequential };
        let ev = Evaluator::new(&tab).with_parallelism(par);
        // SAFETY (all three): the buffers are 4-aligned Vec<u32> storage of whole elements.
        let f: EvalFn = match $dtype {
            "bf16" => Box::new(move |x, y| unsafe {
                ev.eval(cast::<$k::bf16>(x), cast_mut::<$k::bf16>(y)).unwrap()
            }),
            "f16" => Box::new(move |x, y| unsafe {
                ev.eval(cast::<$k::f16>(x), cast_mut::<$k::f16>(y)).unwrap()
            }),
            _ => Box::new(move |x, y| unsafe { ev.eval(cast::<f32>(x), cast_mut::<f32>(y)).unwrap() }),
        };
        (f, lohi)
    }};
}

/// # Safety
/// `b` is aligned for T and holds whole elements of T (any bit pattern valid).
unsafe fn cast<T>(b: &[u8]) -> &[T] {
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const T, b.len() / std::mem::size_of::<T>()) }
}

/// # Safety
/// As [`cast`].
unsafe fn cast_mut<T>(b: &mut [u8]) -> &mut [T] {
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, b.len() / std::mem::size_of::<T>()) }
}

/// `x` in the element type `dtype`, as bytes in 4-aligned storage.
fn encode(x: &[f32], dtype: &str) -> Vec<u32> {
    let bits: Vec<u16> = match dtype {
        "bf16" => x.iter().map(|&v| pwpa_new::bf16::from_f32(v).to_bits()).collect(),
        "f16" => x.iter().map(|&v| pwpa_new::f16::from_f32(v).to_bits()).collect(),
        _ => return x.iter().map(|v| v.to_bits()).collect(),
    };
    let mut w = vec![0u32; bits.len().div_ceil(2)];
    for (k, b) in bits.iter().enumerate() {
        w[k / 2] |= (*b as u32) << (16 * (k % 2));
    }
    w
}

fn bytes(w: &[u32], len: usize) -> &[u8] {
    // SAFETY: u32 storage viewed as bytes, within its length.
    unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, len) }
}

fn bytes_mut(w: &mut [u32], len: usize) -> &mut [u8] {
    // SAFETY: as `bytes`.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, len) }
}

fn main() {
    let lab::Args { n, rounds, normal, dtype, parallel, targets } = lab::Args::parse(2048, 3000);
    let esize = if dtype == "f32" { 4 } else { 2 };
    let len = n * esize;
    println!("{:34} {:>8} {:>8} {:>7} {:>7}   (ns/elem, n = {n}, {rounds} interleaved rounds)", "target", "old min", "new min", "min n/o", "med n/o");
    for t in &targets {
        let (fo, (lo, hi)) = mk!(pwpa_old, t, dtype.as_str(), parallel);
        let (fnew, _) = mk!(pwpa_new, t, dtype.as_str(), parallel);
        let xw = encode(&lab::inputs(n, normal, lo, hi), &dtype);
        let x = bytes(&xw, len);
        let (mut yow, mut ynw) = (vec![0u32; n], vec![0u32; n]);
        let (yo, yn) = (bytes_mut(&mut yow, len), bytes_mut(&mut ynw, len));
        fo(x, yo); fnew(x, yn);
        let same = yo == yn;
        let (mut to, mut tn) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        for r in 0..rounds {
            let order = r % 2 == 0;
            for k in 0..2 {
                let t0 = Instant::now();
                if (k == 0) == order { fo(black_box(x), black_box(&mut *yo)); } else { fnew(black_box(x), black_box(&mut *yn)); }
                let dt = t0.elapsed().as_secs_f64() / n as f64 * 1e9;
                if (k == 0) == order { to.push(dt) } else { tn.push(dt) }
            }
        }
        to.sort_by(|a, b| a.partial_cmp(b).unwrap()); tn.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (mo, mn) = (to[rounds / 2], tn[rounds / 2]);
        println!("{t:34} {:8.3} {:8.3} {:7.3} {:7.3}{}", to[0], tn[0], tn[0] / to[0], mn / mo, if same { "" } else { "  RESULTS DIFFER" });
    }
}
