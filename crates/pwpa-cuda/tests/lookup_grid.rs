//! The arbitrary-breakpoint lookup grid (host side, no GPU): scanning forward from a
//! cell's start piece, with the kernel's f32 cell arithmetic, gives exactly the index rule.

use pwpa::table::arbitrary_index;

/// A xorshift64 stream (deterministic test inputs).
fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// The kernels' one-step rule: the cell's start piece, plus one when x >= b[s+1] (the
/// last piece has no successor).
fn one_step_index(pts: &[f32], s0: usize, x: f32) -> usize {
    if s0 + 2 < pts.len() && x >= pts[s0 + 1] {
        s0 + 1
    } else {
        s0
    }
}

fn cell(x: f32, b0: f32, inv: f32, g: u32) -> u32 {
    (((x - b0) * inv) as u32).min(g - 1)
}

#[test]
fn scan_from_the_cell_gives_the_index_rule() {
    let mut next = xorshift(0x1234_5678_9ABC_DEF0u64);
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

/// The one-step grid (one compare against the cell's next breakpoint, no scan) gives
/// exactly the index rule wherever the host accepts it; and the host accepts the grids of
/// typical tables (fitted activations, the benchmark's warped breakpoints).
#[test]
fn one_step_grid_gives_the_index_rule() {
    let mut next = xorshift(0x0DDB_A11C_0FFE_E123u64);
    let mut accepted = 0;
    for case in 0..60 {
        let p = 1 + (next() % 300) as usize;
        // Mildly non-uniform points (gaps within a factor ~10), sometimes clustered ones.
        let mut pts: Vec<f32> = Vec::with_capacity(p + 1);
        let mut x = -((next() % 1000) as f64) * 1e-2;
        for _ in 0..=p {
            pts.push(x as f32);
            let gap = if case % 4 == 0 { 1e-6 } else { 1e-2 };
            x += gap * (1.0 + (next() % 1000) as f64 * 1e-2);
        }
        pts.dedup();
        if pts.len() < 2 {
            continue;
        }
        let np = pts.len() - 1;
        let Some((g, inv, cells)) = pwpa_cuda::lookup_grid_one_step(&pts) else {
            continue;
        };
        accepted += 1;
        assert!(pwpa_cuda::grid_is_one_step(np, &cells));
        let mut xs: Vec<f32> = Vec::new();
        for &b in &pts {
            for d in -3i32..=3 {
                xs.push(f32::from_bits(b.to_bits().wrapping_add_signed(d)));
                xs.push(-f32::from_bits(b.to_bits().wrapping_add_signed(d)));
            }
        }
        for _ in 0..3000 {
            let k = next();
            xs.push(f32::from_bits(k as u32));
            let t = (k >> 32) as f64 / u32::MAX as f64;
            xs.push((pts[0] as f64 + t * (pts[np] as f64 - pts[0] as f64)) as f32);
        }
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MAX,
            -f32::MAX,
        ]);
        for x in xs.into_iter().filter(|x| !x.is_nan()) {
            let s0 = cells[cell(x, pts[0], inv, g) as usize] as usize;
            let i = one_step_index(&pts, s0, x);
            assert_eq!(i, arbitrary_index(&pts, x), "x = {x:e}, case {case}");
        }
    }
    assert!(accepted >= 30, "only {accepted} grids were one-step");
    // A fitted bf16-exact GELU table's breakpoints (56 pieces, gaps 0.068 to 5.0).
    let gelu: [f32; 57] = [
        -8.0,
        -7.868105,
        -7.8009696,
        -7.7338343,
        -7.5970516,
        -7.4576077,
        -7.315336,
        -7.1700544,
        -7.0215564,
        -6.9455843,
        -6.8696127,
        -6.7917886,
        -6.7139645,
        -6.634141,
        -6.554318,
        -6.472327,
        -6.3903365,
        -6.2216344,
        -6.047761,
        -5.868189,
        -5.68229,
        -5.4893093,
        -5.28832,
        -5.0781665,
        -4.8573685,
        -4.740672,
        -4.6239753,
        -4.3753085,
        -4.241398,
        -4.107487,
        -3.8144171,
        -3.4851491,
        -3.2888253,
        -3.0925014,
        -2.8072147,
        -2.5219278,
        -2.1778817,
        -1.8338354,
        -1.5268176,
        -1.2197998,
        -0.88069993,
        -0.5416001,
        -0.40620008,
        -0.27080005,
        -0.13540003,
        -0.06770001,
        0.0,
        0.06782995,
        0.1356599,
        0.2713198,
        0.5426396,
        0.98578763,
        1.4289356,
        1.81617,
        2.2034042,
        2.9778726,
        8.0,
    ];
    assert!(pwpa_cuda::lookup_grid_one_step(&gelu).is_some());
}

/// The ordered-key grid (cells of 2^shift consecutive floats) is accepted for log-spaced
/// breakpoints, where the uniform one-step grid is not, and gives exactly the index rule.
#[test]
fn ordered_key_grid_gives_the_index_rule_on_log_spaced_points() {
    let mut next = xorshift(0x5EED_1234_0BAD_F00Du64);
    for case in 0..24 {
        let p = 2 + (next() % 200) as usize;
        let (a, z) = (
            2f64.powi(-(1 + (next() % 12) as i32)),
            2f64.powi(1 + (next() % 8) as i32),
        );
        let mut pts: Vec<f32> = (0..=p)
            .map(|i| (a * (z / a).powf(i as f64 / p as f64)) as f32)
            .collect();
        if case % 2 == 1 {
            let mut neg: Vec<f32> = pts.iter().rev().map(|&v| -v).collect();
            neg.extend(pts.iter().skip(1));
            pts = neg;
        }
        pts.dedup();
        let np = pts.len() - 1;
        let (g, shift, cells) = pwpa_cuda::lookup_grid_ord_one_step(&pts)
            .unwrap_or_else(|| panic!("case {case}: no ordered-key one-step grid"));
        assert!(pwpa_cuda::grid_is_one_step(np, &cells));
        let mut xs: Vec<f32> = Vec::new();
        for &b in &pts {
            for d in -3i32..=3 {
                xs.push(f32::from_bits(b.to_bits().wrapping_add_signed(d)));
            }
        }
        for _ in 0..4000 {
            xs.push(f32::from_bits(next() as u32));
        }
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MAX,
            -f32::MAX,
        ]);
        for x in xs.into_iter().filter(|x| !x.is_nan()) {
            // The kernel's u32 cell against the same rule in i64 arithmetic.
            let c = pwpa_cuda::ord_cell(x, pts[0], shift, g);
            let d = pwpa_cuda::ord_key(x) - pwpa_cuda::ord_key(pts[0]);
            let want = if d <= 0 {
                0
            } else {
                (d >> shift).min(g as i64 - 1) as u32
            };
            assert_eq!(c, want, "cell of x = {x:e}, case {case}");
            let s0 = cells[c as usize] as usize;
            let i = one_step_index(&pts, s0, x);
            assert_eq!(i, arbitrary_index(&pts, x), "x = {x:e}, case {case}");
        }
    }
}
