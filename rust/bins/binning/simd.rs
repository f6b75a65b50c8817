//! Choosing AVX2 at run time: the kernels compiled twice, and the check that picks one.

/// Whether the passes may use AVX2, checked once (the check is cached).
#[inline(always)]
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `$name`, which runs `$kernel` compiled for AVX2 where the
/// processor has it (vectorised four float64 wide instead of SSE2's two),
/// and as it is elsewhere. The results are the same bits either way, as Rust
/// never fuses or reorders floating-point operations.
macro_rules! with_avx2 {
    ($name:ident, $avx2:ident, $kernel:ident, <$($g:ident: $b:path),*>, ($($arg:ident: $t:ty),*) -> $r:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        fn $avx2<$($g: $b),*>($($arg: $t),*) -> $r {
            $kernel($($arg),*)
        }

        pub(super) fn $name<$($g: $b),*>($($arg: $t),*) -> $r {
            #[cfg(target_arch = "x86_64")]
            if $crate::bins::binning::simd::has_avx2() {
                // SAFETY: the processor was just found to support AVX2.
                return unsafe { $avx2($($arg),*) };
            }
            $kernel($($arg),*)
        }
    };
}
