//! Host-only checks of the kernel choice and of the 16-bit result table (no GPU needed).

mod common;

use common::{random_table, Rng};
use pwpa::{bf16, f16, DType};
use pwpa_cuda::{result_table, KernelChoice};

#[test]
fn kernel_choice_parses_and_rejects_unknown_names() {
    assert_eq!(KernelChoice::parse("poly").unwrap(), KernelChoice::Poly);
    assert_eq!(KernelChoice::parse("LUT").unwrap(), KernelChoice::Lut);
    assert_eq!(KernelChoice::parse("auto").unwrap(), KernelChoice::Auto);
    let e = KernelChoice::parse("fast").unwrap_err().to_string();
    assert!(e.contains("fast") && e.contains("PWPA_CUDA_KERNEL"), "{e}");
}

#[test]
fn result_table_is_the_cpu_reference_on_every_pattern() {
    let t = random_table(&mut Rng(3), true, 37, 4, 3, 4);
    let lut = result_table(&t, DType::BF16, DType::F16).unwrap();
    assert_eq!(lut.len(), 65536);
    for b in (0..=u16::MAX).step_by(7) {
        let want: f16 = t.eval(bf16::from_bits(b).to_f32());
        assert_eq!(lut[b as usize], want.to_bits(), "bf16 pattern {b:04x}");
    }
    let lut = result_table(&t, DType::F16, DType::F16).unwrap();
    let nan = lut[0x7E01];
    assert_eq!(nan, 0x7E00, "NaN input gives the canonical f16 NaN");
    assert!(result_table(&t, DType::F32, DType::BF16).is_none());
    assert!(result_table(&t, DType::BF16, DType::F32).is_none());
}
