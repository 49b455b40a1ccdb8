//! CUDA backend of pwpa (placeholder; see issue 4).
