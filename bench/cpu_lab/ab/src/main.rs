//! A/B of two builds of pwpa's CPU fast path in one process: interleaved rounds on a
//! cache-resident buffer, one thread, minimum and median time per element.
use std::hint::black_box;
use std::time::Instant;

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
    let mut n = 2048usize;
    let mut rounds = 3000usize;
    let mut normal: Option<f64> = None;
    let mut targets = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().unwrap().parse().unwrap(),
            "--rounds" => rounds = args.next().unwrap().parse().unwrap(),
            "--normal" => normal = Some(args.next().unwrap().parse().unwrap()),
            _ => targets.push(a),
        }
    }
    println!("{:34} {:>8} {:>8} {:>7} {:>7}   (ns/elem, n = {n}, {rounds} interleaved rounds)", "target", "old min", "new min", "min n/o", "med n/o");
    for t in &targets {
        let (fo, (lo, hi)) = mk!(pwpa_old, t, 0);
        let (fnew, _) = mk!(pwpa_new, t, 0);
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut u = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; ((s >> 40) as f64 + 0.5) / (1u64 << 24) as f64 };
        let x: Vec<f32> = (0..n).map(|_| match normal {
            Some(sd) => { let (a, b) = (u(), u()); (sd * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32 }
            None => { let w = hi - lo; (lo - 0.1 * w + 1.2 * w * u()) as f32 }
        }).collect();
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
