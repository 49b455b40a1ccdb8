//! The arbitrary-breakpoint lookup grid (host side, no GPU): scanning forward from a
//! cell's start piece, with the kernel's f32 cell arithmetic, gives exactly the index rule.

use pwpa::table::arbitrary_index;

fn cell(x: f32, b0: f32, inv: f32, g: u32) -> u32 {
    (((x - b0) * inv) as u32).min(g - 1)
}

#[test]
fn scan_from_the_cell_gives_the_index_rule() {
    let mut s = 0x1234_5678_9ABC_DEF0u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for case in 0..40 {
        let p = 1 + (next() % 300) as usize;
        let mut pts: Vec<f32> = (0..=p)
            .map(|_| ((next() % 2_000_001) as f32 - 1e6) * if case % 3 == 0 { 1e-6 } else { 1e-3 })
            .collect();
        pts.sort_by(f32::total_cmp);
        pts.dedup();
        if pts.len() < 2 {
            continue;
        }
        let (g, inv, cells) = pwpa_cuda::lookup_grid(&pts);
        let np = pts.len() - 1;
        let mut xs: Vec<f32> = (0..5000)
            .map(|_| {
                let k = next();
                if k % 4 == 0 {
                    f32::from_bits(k as u32 >> 1) * if k & 2 == 0 { 1.0 } else { -1.0 }
                } else {
                    let i = (k as usize >> 8) % pts.len();
                    f32::from_bits(
                        pts[i]
                            .to_bits()
                            .wrapping_add((k >> 40) as u32 % 5)
                            .wrapping_sub(2),
                    )
                }
            })
            .filter(|x| !x.is_nan())
            .collect();
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0]);
        for x in xs {
            let mut i = cells[cell(x, pts[0], inv, g) as usize] as usize;
            assert!(
                i <= arbitrary_index(&pts, x),
                "lower bound broken at x={x:e}"
            );
            while i + 1 < np && x >= pts[i + 1] {
                i += 1;
            }
            assert_eq!(i, arbitrary_index(&pts, x), "x = {x:e}, case {case}");
        }
    }
}
