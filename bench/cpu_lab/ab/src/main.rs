//! A/B of two builds of pwpa's CPU fast path in one process: interleaved rounds on a
//! cache-resident buffer, one thread, minimum and median time per element.
use std::hint::black_box;
use std::time::Instant;

// crates/pwpa/benches/common/lab.rs, copied here by ab.sh.
mod lab;

macro_rules! mk {
    ($k:ident, $t:expr, $x:expr) => {{
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
        let ev = Evaluator::new(&tab).with_parallelism(Parallelism::Sequential);
        let f: Box<dyn Fn(&[f32], &mut [f32])> = Box::new(move |x, y| ev.eval(x, y).unwrap());
        (f, lohi)
    }};
}

fn main() {
    let lab::Args { n, rounds, normal, targets } = lab::Args::parse(2048, 3000);
    println!("{:34} {:>8} {:>8} {:>7} {:>7}   (ns/elem, n = {n}, {rounds} interleaved rounds)", "target", "old min", "new min", "min n/o", "med n/o");
    for t in &targets {
        let (fo, (lo, hi)) = mk!(pwpa_old, t, 0);
        let (fnew, _) = mk!(pwpa_new, t, 0);
        let x = lab::inputs(n, normal, lo, hi);
        let (mut yo, mut yn) = (vec![0f32; n], vec![0f32; n]);
        fo(&x, &mut yo); fnew(&x, &mut yn);
        let same = yo.iter().zip(&yn).all(|(a, b)| a.to_bits() == b.to_bits());
        let (mut to, mut tn) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        for r in 0..rounds {
            let order = r % 2 == 0;
            for k in 0..2 {
                let t0 = Instant::now();
                if (k == 0) == order { fo(black_box(&x), black_box(&mut yo)); } else { fnew(black_box(&x), black_box(&mut yn)); }
                let dt = t0.elapsed().as_secs_f64() / n as f64 * 1e9;
                if (k == 0) == order { to.push(dt) } else { tn.push(dt) }
            }
        }
        to.sort_by(|a, b| a.partial_cmp(b).unwrap()); tn.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (mo, mn) = (to[rounds / 2], tn[rounds / 2]);
        println!("{t:34} {:8.3} {:8.3} {:7.3} {:7.3}{}", to[0], tn[0], tn[0] / to[0], mn / mo, if same { "" } else { "  RESULTS DIFFER" });
    }
}
