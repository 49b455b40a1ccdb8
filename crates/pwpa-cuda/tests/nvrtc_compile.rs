//! Compiles every kernel specialisation with NVRTC for sm_90 — needs NVRTC only, no GPU.
//! Skips (with a message) where NVRTC cannot be loaded.

use pwpa::DType;
use pwpa_cuda::compile;
use pwpa_cuda::KernelSpec;

fn opts(extra: &[&str]) -> Vec<String> {
    let mut o = vec![
        "--gpu-architecture=sm_90".to_string(),
        "--fmad=false".to_string(),
        "--std=c++17".to_string(),
        "--ptxas-options=-v".to_string(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    o
}

fn spills(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            l.contains("spill") && !l.contains(" 0 bytes spill stores, 0 bytes spill loads")
        })
        .map(|l| l.to_string())
        .collect()
}

/// A degree-3 arbitrary-breakpoint kernel with an exp2 left tail as the host launches
/// large-block kernels (1024 threads, 8 record copies, one-step grid, 16 cell copies);
/// the specs below change what they test.
fn large_block_spec(xd: DType, yd: DType) -> KernelSpec {
    KernelSpec {
        x_dtype: xd,
        y_dtype: yd,
        degree: 3,
        arbitrary: true,
        tails: (3, 1, 7, 1),
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
        compact: false,
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
    }
}

/// Whether NVRTC loads; if not, says that `what` is skipped. Named explicitly (as
/// scripts/test.sh does, PWPA_NVRTC), it must load: no silent skip.
fn nvrtc_or_skip(what: &str) -> bool {
    if compile::nvrtc_present() {
        return true;
    }
    if let Some(p) = std::env::var_os("PWPA_NVRTC") {
        panic!("PWPA_NVRTC={} does not load", p.to_string_lossy());
    }
    eprintln!("NVRTC not found: skipping {what}");
    false
}

/// Compiles `spec` for sm_90 and fails if ptxas reports spills.
fn compiles_without_spills(spec: &KernelSpec) {
    let c = compile::compile("pwpa_eval", &spec.source(), &opts(&[]), true)
        .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let s = spills(&c.log);
    assert!(s.is_empty(), "{spec:?} spills: {s:?}");
    // Result tables staged by a 4-byte load per thread and round instead of bulk copies
    // (PWPA_CUDA_STAGE4=0; the default stages them by bulk copies on sm_90).
    if spec.taillut || spec.full_lut {
        let src = spec.source();
        assert!(src.contains("#define STAGE4 1\n"), "{spec:?}");
        let src = src.replace("#define STAGE4 1\n", "#define STAGE4 0\n");
        let c = compile::compile("pwpa_eval", &src, &opts(&[]), true)
            .unwrap_or_else(|e| panic!("STAGE4 0 {spec:?}: {e}"));
        let s = spills(&c.log);
        assert!(s.is_empty(), "STAGE4 0 {spec:?} spills: {s:?}");
    }
}

#[test]
fn every_specialisation_compiles_for_sm90() {
    if !nvrtc_or_skip("the NVRTC compile test") {
        return;
    }
    eprintln!("NVRTC {:?}", compile::nvrtc_version());
    let dts = [DType::F32, DType::F16, DType::BF16];
    let mut n = 0;
    let mut k = 0usize;
    let mut report = Vec::new();
    for &xd in &dts {
        for &yd in &dts {
            for degree in [0u32, 1, 3, 5, 8, 15] {
                for arbitrary in [false, true] {
                    for (tails, fused) in [
                        ((0, 2, 1, 1), None),
                        ((3, 1, 5, 1), Some((degree.saturating_sub(1), 0, 2, 1, 1))),
                        ((2, 3, 1, 8), Some((degree, 3, 3, 4, 4))),
                    ] {
                        for (smem_rec, smem_idx) in [(true, true), (false, false)] {
                            // Keep the run short (CI has 2 cores): a sample of the cross product
                            // in which every dtype pair, degree, kind, tail code and staging appears.
                            k += 1;
                            if k % 37 != 0
                                && !(xd == DType::BF16 && yd == xd && degree == 5 && smem_rec)
                            {
                                continue;
                            }
                            let spec = KernelSpec {
                                x_dtype: xd,
                                y_dtype: yd,
                                degree,
                                arbitrary,
                                tails,
                                fused,
                                smem_rec,
                                anchors: arbitrary || k % 3 == 0,
                                anchors2: arbitrary || k % 2 == 0,
                                smem_idx: smem_idx && arbitrary,
                                unroll: if degree > 8 { 1 } else { 4 },
                                block: 256,
                                repl: [1, 2, 4, 8][k % 4],
                                replt: [1, 32, 16, 8, 2][k % 5],
                                swz: k % 7 < 4,
                                one_step: arbitrary && k % 2 == 0,
                                grid_ord: arbitrary && k % 4 == 0,
                                ord_pos: arbitrary && k % 8 == 0,
                                crepl: [1, 16, 4][k % 3],
                                grad: fused.is_none() && k % 3 != 1,
                                compact: fused.is_none()
                                    && xd == DType::F32
                                    && (tails.0 == 3 || tails.1 == 3),
                                taillut: fused.is_none()
                                    && xd != DType::F32
                                    && (tails.0 == 3 || tails.1 == 3),
                                full_lut: false,
                                full_mid: false,
                                lean: false,
                                lean_window: false,
                                min_blocks: 1,
                                // Tile tickets per block, per warp and per group of 4 warps.
                                wsub: [0, 2][k % 2],
                                gw: [1, 1, 1, 4][k % 4],
                                tile_grid: false,
                                fast_group: false,
                            };
                            let c = compile::compile("pwpa_eval", &spec.source(), &opts(&[]), true)
                                .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
                            assert!(!c.image.is_empty());
                            let s = spills(&c.log);
                            if !s.is_empty() {
                                report.push(format!("{spec:?}: {}", s.join(" | ")));
                            }
                            n += 1;
                        }
                    }
                }
            }
        }
    }
    // Warp compaction of exp2-tail elements: one and both tails exp2, uniform and
    // arbitrary, f32 and 16-bit outputs.
    for (tails, yd, arbitrary) in [
        ((3u32, 3u32, 7u32, 2u32), DType::F32, false),
        ((1, 3, 1, 8), DType::BF16, true),
        ((3, 0, 4, 1), DType::F16, true),
    ] {
        compiles_without_spills(&KernelSpec {
            arbitrary,
            tails,
            smem_idx: arbitrary,
            one_step: arbitrary,
            compact: true,
            ..large_block_spec(DType::F32, yd)
        });
        n += 1;
    }
    // The f32 forward pass with one-step tiles per group of 8 or 16 warps (the host's
    // choice on H100-class devices where a block would take the tickets): uniform and
    // arbitrary, with and without compaction, f32 and 16-bit outputs.
    for (gw, compact, arbitrary, yd) in [
        (16u32, false, false, DType::F32),
        (16, false, true, DType::BF16),
        (8, true, true, DType::F32),
        (8, true, false, DType::F16),
    ] {
        compiles_without_spills(&KernelSpec {
            arbitrary,
            tails: if compact { (3, 1, 8, 1) } else { (0, 1, 1, 1) },
            smem_idx: arbitrary,
            one_step: arbitrary,
            compact,
            wsub: 1,
            gw,
            ..large_block_spec(DType::F32, yd)
        });
        n += 1;
    }
    // The same in blocks of 512 threads, one 16-warp group each (the host's choice for
    // small f32 tables on devices above 4 TB/s): arbitrary degree 3 and uniform degree 4,
    // the latter with an exp2 tail (computed per element, no compaction).
    // Since session 30 also with the ordered-key grid (log-spaced breakpoints).
    for (degree, arbitrary, grid_ord, ord_pos, tails) in [
        (3u32, true, false, false, (0, 1, 1, 1)),
        (3, true, true, false, (0, 0, 1, 1)),
        (3, true, true, true, (0, 0, 1, 1)),
        (4, false, false, false, (3, 1, 8, 1)),
    ] {
        compiles_without_spills(&KernelSpec {
            degree,
            arbitrary,
            tails,
            anchors: arbitrary,
            smem_idx: arbitrary,
            one_step: arbitrary,
            grid_ord,
            ord_pos,
            block: 512,
            wsub: 1,
            gw: 16,
            fast_group: true,
            ..large_block_spec(DType::F32, DType::F32)
        });
        n += 1;
    }
    // The backward pass (gradient chunks of every width: 8, 16 and 32 bytes), with tile
    // tickets per block, and per warp for 16-bit inputs (the host's choices).
    for (xd, yd, wsub) in [
        (DType::F32, DType::F32, 0u32),
        (DType::BF16, DType::BF16, 0),
        (DType::BF16, DType::BF16, 2),
        (DType::F16, DType::F32, 0),
        (DType::F16, DType::F32, 2),
        (DType::F32, DType::BF16, 0),
    ] {
        compiles_without_spills(&KernelSpec {
            degree: 2,
            // As the host launches it: two chunks in flight for 16-bit in, f32 out.
            // (compact is on for every f32 input here)
            unroll: if (xd.size() == 2 && yd == DType::F32) || xd == DType::F32 {
                2
            } else {
                4
            },
            grad: true,
            compact: xd == DType::F32,
            taillut: xd != DType::F32,
            wsub,
            ..large_block_spec(xd, yd)
        });
        n += 1;
    }
    // The backward pass of 16-bit inputs through every input's result in shared memory
    // (FULLLUT), as the host launches it (no records or cells staged, two chunks in
    // flight), with gradients of every width and tile tickets per block and (tuning) per
    // warp; and four chunks, which compile too.
    // One chunk with launch bounds for two blocks of 1024 threads (32 registers), as the
    // host launches tables small enough for two blocks, the middle run cut or not; each
    // 16-bit-gradient kind with LEAN (tables of finite results) and without.
    for (xd, yd, unroll, wsub, mid) in [
        (DType::BF16, DType::BF16, 2u32, 0u32, false),
        (DType::F16, DType::F16, 2, 0, false),
        (DType::F16, DType::F16, 2, 0, true),
        (DType::BF16, DType::BF16, 2, 0, true),
        (DType::F16, DType::BF16, 2, 0, false),
        (DType::F16, DType::F16, 2, 2, false),
        (DType::F16, DType::F32, 2, 0, false),
        (DType::BF16, DType::F32, 2, 0, true),
        (DType::BF16, DType::BF16, 4, 0, false),
        (DType::BF16, DType::BF16, 1, 0, true),
        (DType::BF16, DType::BF16, 1, 0, false),
        (DType::F16, DType::F16, 1, 0, true),
        (DType::F16, DType::F16, 1, 0, false),
    ] {
        let grad = true;
        let spec = KernelSpec {
            unroll,
            smem_rec: false,
            smem_idx: false,
            repl: 1,
            replt: 1,
            crepl: 1,
            grad,
            full_lut: true,
            full_mid: mid,
            lean: false,
            min_blocks: if unroll == 1 { 2 } else { 1 },
            wsub,
            ..large_block_spec(xd, yd)
        };
        assert!(spec
            .source()
            .contains(&format!("#define MINB {}\n", spec.min_blocks)));
        assert!(spec
            .source()
            .contains(&format!("#define FULLLUT {}\n", 1 + mid as u32)));
        compiles_without_spills(&spec);
        n += 1;
        if yd != DType::F32 {
            // The short path for chunks without NaN inputs or non-finite gradients.
            let lean = KernelSpec { lean: true, ..spec };
            assert!(lean.source().contains("#define LEAN 1\n"));
            compiles_without_spills(&lean);
            n += 1;
            // And with the input window of a table whose results overflow at an end
            // (LEAN is taken with one block per multiprocessor only: CudaTable::spec).
            if !mid && spec.min_blocks == 1 {
                let win = KernelSpec {
                    lean_window: true,
                    ..lean
                };
                assert!(win.source().contains("#define LEANW 1\n"));
                compiles_without_spills(&win);
                n += 1;
            }
        }
    }
    // f32 arbitrary-breakpoint kernels as the host launches them (four chunks in flight,
    // tile tickets per block or per warp), anchors in the records or computed: no spills
    // up to D = 8. (D = 15 with computed anchors, e.g. a seed import's zero anchors, may
    // spill a few bytes: reported, not failed.)
    for (degree, anchors, wsub) in [0u32, 3, 5, 8, 9, 15]
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
        .flat_map(|(d, a)| [(d, a, 0u32), (d, a, 2)])
    {
        {
            let spec = KernelSpec {
                degree,
                anchors,
                tails: (0, 1, 1, 1),
                wsub,
                ..large_block_spec(DType::F32, DType::F32)
            };
            if degree <= 8 {
                compiles_without_spills(&spec);
            } else {
                let c = compile::compile("pwpa_eval", &spec.source(), &opts(&[]), true)
                    .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
                let s = spills(&c.log);
                if !s.is_empty() {
                    report.push(format!("{spec:?}: {}", s.join(" | ")));
                }
            }
            n += 1;
        }
    }
    // Two float4 planes piece by piece (SWZ), as the host launches them for large f32
    // tables (4 copies at P = 1024, 1 at P = 4096; 8 copies need no swap), uniform and
    // arbitrary, D = 5 to 8, tile tickets per block and per warp.
    for (degree, arbitrary, repl, wsub) in [
        (5u32, true, 4u32, 0u32),
        (5, true, 1, 2),
        (8, true, 4, 2),
        (8, true, 2, 0),
        (8, false, 1, 2),
        (7, false, 8, 0),
    ] {
        compiles_without_spills(&KernelSpec {
            degree,
            arbitrary,
            anchors: arbitrary,
            smem_idx: arbitrary,
            one_step: arbitrary,
            tails: (0, 1, 1, 1),
            repl,
            replt: 4,
            crepl: 2,
            swz: true,
            wsub,
            ..large_block_spec(DType::F32, DType::F32)
        });
        n += 1;
    }
    for dt in 0..3 {
        let c = compile::compile(
            "mathref",
            pwpa_cuda::mathref::MATHREF_CU,
            &opts(&[&format!("-DIO_T={dt}")]),
            true,
        )
        .unwrap_or_else(|e| panic!("mathref: {e}"));
        assert!(!c.image.is_empty());
    }
    let c = compile::compile(
        "seed",
        pwpa_cuda::seed::SEED_CU,
        &opts(&["-DREGCHUNK=8", "-DUNROLL_SIZE=8"]),
        true,
    )
    .unwrap_or_else(|e| panic!("seed: {e}"));
    assert!(!c.image.is_empty());
    for (unroll, gw) in [(1u32, 32u32), (2, 16), (4, 32), (4, 8), (2, 4)] {
        let c = compile::compile(
            "pwpa_lut",
            &pwpa_cuda::CudaTable::lut_source(unroll, gw),
            &opts(&[]),
            true,
        )
        .unwrap_or_else(|e| panic!("lut (unroll {unroll}, gw {gw}): {e}"));
        assert!(!c.image.is_empty());
        let s = spills(&c.log);
        assert!(s.is_empty(), "lut kernel spills: {s:?}");
        eprintln!("lut unroll {unroll} gw {gw}: {}", c.log.trim());
    }
    eprintln!("compiled {n} pwpa specialisations + lut + mathref + seed");
    for r in &report {
        eprintln!("SPILL {r}");
    }
}

#[test]
fn compile_errors_keep_the_log() {
    if !compile::nvrtc_present() {
        eprintln!("NVRTC not found: skipping the NVRTC compile test");
        return;
    }
    let e = compile::compile(
        "bad",
        "extern \"C\" __global__ void k() { undefined_thing(); }",
        &opts(&[]),
        true,
    )
    .err()
    .expect("must fail");
    let msg = e.to_string();
    assert!(msg.contains("undefined_thing"), "{msg}");
}

/// The streams' cache hints follow the kernel mode (`KernelSpec::io_hints`, measured in
/// bench/results/gpu-2026-11-28-h100-s28-io-hints.md): evict-first stores (`st.global.cs`)
/// for exp2-tail compaction and ordered-key grids, plain stores otherwise, and plain loads of
/// x in every mode (no `ld.global.cs`). Read from the PTX.
#[test]
fn stream_cache_hints_follow_the_kernel_mode() {
    if !nvrtc_or_skip("the cache-hint test") {
        return;
    }
    if std::env::var_os("PWPA_CUDA_IOH").is_some() {
        eprintln!("PWPA_CUDA_IOH is set: skipping the cache-hint test (it checks the defaults)");
        return;
    }
    let base = KernelSpec {
        block: 256,
        repl: 1,
        crepl: 1,
        one_step: false,
        ..large_block_spec(DType::F32, DType::F32)
    };
    let uniform = KernelSpec {
        arbitrary: false,
        tails: (0, 1, 1, 1),
        smem_idx: false,
        ..base
    };
    let arbitrary = KernelSpec {
        tails: (0, 1, 1, 1),
        ..base
    };
    let ordered = KernelSpec {
        grid_ord: true,
        ..arbitrary
    };
    let compact = KernelSpec {
        compact: true,
        ..base
    };
    // The ordered-key grid in the fast-memory devices' small-table launch stores plainly.
    let ordered_fast = KernelSpec {
        block: 512,
        wsub: 1,
        gw: 16,
        fast_group: true,
        ..ordered.clone()
    };
    let ptx_opts = vec![
        "--gpu-architecture=compute_90".to_string(),
        "--fmad=false".to_string(),
        "--std=c++17".to_string(),
    ];
    for (spec, evict_first_stores) in [
        (uniform, false),
        (arbitrary, false),
        (ordered, true),
        (ordered_fast, false),
        (compact, true),
    ] {
        let c = compile::compile("pwpa_eval", &spec.source(), &ptx_opts, false)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let ptx = String::from_utf8_lossy(&c.image);
        assert!(
            ptx.contains("st.global"),
            "{spec:?}: no global store in the PTX"
        );
        assert!(
            !ptx.contains("ld.global.cs"),
            "{spec:?}: evict-first loads of x"
        );
        assert_eq!(
            ptx.contains("st.global.cs"),
            evict_first_stores,
            "{spec:?}: evict-first stores expected: {evict_first_stores}"
        );
    }
}

/// The full-table backward kernels with LEAN for devices before sm_90 (16x2 min/max from
/// the SIMD intrinsics) and before sm_80 (no packed conversions or bf16x2 FMAs: the kernel
/// drops LEAN and takes the full path): they compile, without spills.
#[test]
fn lean_kernels_compile_for_older_devices() {
    if !nvrtc_or_skip("the NVRTC compile test (older devices)") {
        return;
    }
    for arch in ["sm_75", "sm_80", "sm_86"] {
        for (xd, yd, mid, window) in [
            (DType::F16, DType::F16, false, false),
            (DType::F16, DType::F16, false, true),
            (DType::BF16, DType::BF16, true, false),
            (DType::F16, DType::BF16, false, false),
            (DType::BF16, DType::BF16, false, true),
        ] {
            let spec = KernelSpec {
                unroll: 2,
                smem_rec: false,
                smem_idx: false,
                grad: true,
                full_lut: true,
                full_mid: mid,
                lean: true,
                lean_window: window,
                ..large_block_spec(xd, yd)
            };
            let o: Vec<String> = opts(&[])
                .into_iter()
                .map(|o| {
                    if o.starts_with("--gpu-architecture=") {
                        format!("--gpu-architecture={arch}")
                    } else {
                        o
                    }
                })
                .collect();
            let c = compile::compile("pwpa_eval", &spec.source(), &o, true)
                .unwrap_or_else(|e| panic!("{arch} {spec:?}: {e}"));
            let s = spills(&c.log);
            assert!(s.is_empty(), "{arch} {spec:?} spills: {s:?}");
        }
    }
}
