//! Inputs and command line of the CPU labs (`examples/cpu_lab.rs`, `bench/cpu_lab/ab`),
//! and the criterion bench's normal inputs. Plain std: `bench/cpu_lab/ab.sh` copies this
//! file into a crate that has no `pwpa` of that name.

/// `n` inputs from a fixed pseudo-random sequence: N(0, sd²) by Box–Muller when `normal`
/// is `Some(sd)`, else uniform over [lo, hi] and 10 % beyond each side.
pub fn inputs(n: usize, normal: Option<f64>, lo: f64, hi: f64) -> Vec<f32> {
    let mut s = 0x2545_F491_4F6C_DD1D_u64;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 40) as f64 + 0.5) / (1u64 << 24) as f64
    };
    (0..n)
        .map(|_| match normal {
            Some(sd) => {
                let (a, b) = (u(), u());
                (sd * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
            }
            None => {
                let w = hi - lo;
                (lo - 0.1 * w + 1.2 * w * u()) as f32
            }
        })
        .collect()
}

/// The labs' command line: `[--n N] [--rounds R] [--normal SIGMA] [--dtype f32|bf16|f16]
/// [--parallel] TARGET...`.
pub struct Args {
    pub n: usize,
    pub rounds: usize,
    pub normal: Option<f64>,
    /// The element type in and out (`f32`, `bf16` or `f16`).
    pub dtype: String,
    /// Evaluate on rayon's pool (default: one thread).
    pub parallel: bool,
    pub targets: Vec<String>,
}

impl Args {
    /// Parses the process's arguments; `n` and `rounds` start at the given defaults.
    pub fn parse(n: usize, rounds: usize) -> Args {
        let mut a = Args {
            n,
            rounds,
            normal: None,
            dtype: "f32".into(),
            parallel: false,
            targets: Vec::new(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(s) = it.next() {
            let mut val = |name: &str| {
                it.next()
                    .unwrap_or_else(|| panic!("{name} needs a value"))
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
            };
            match s.as_str() {
                "--n" => a.n = val("--n") as usize,
                "--rounds" => a.rounds = val("--rounds") as usize,
                "--normal" => a.normal = Some(val("--normal")),
                "--parallel" => a.parallel = true,
                "--dtype" => {
                    a.dtype = it.next().expect("--dtype needs a value");
                    assert!(
                        ["f32", "bf16", "f16"].contains(&a.dtype.as_str()),
                        "--dtype: f32, bf16 or f16"
                    );
                }
                _ => a.targets.push(s),
            }
        }
        a
    }
}
