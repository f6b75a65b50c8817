//! Transparent huge pages for the large buffers that decoded buckets fill.
//!
//! Decoding writes every bucket into freshly allocated memory, and with 4 KiB
//! pages a fifth of the reading time went to page faults. Where the kernel
//! gives huge pages only on request (`transparent_hugepage=madvise`, the
//! common default), asking for them on buffers of several MiB removes most of
//! those faults. It is only advice: nothing changes where it is refused.

const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel to back `buffer`'s allocation with huge pages, if it is large.
pub fn advise<T>(buffer: &Vec<T>) {
    let bytes = buffer.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE_PAGE {
        return;
    }
    let start = buffer.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > aligned {
        advise_range(aligned, end - aligned);
    }
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, length: usize) {
    // SAFETY: the range lies inside a live allocation that we own; MADV_HUGEPAGE
    // changes no contents and is ignored where unsupported.
    unsafe {
        libc::madvise(start as *mut libc::c_void, length, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _length: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn advising_small_and_large_buffers_changes_nothing_visible() {
        let small = vec![1.0f64; 10];
        super::advise(&small);
        let mut large = vec![0u8; 9 << 20];
        super::advise(&large);
        large[5 << 20] = 7;
        assert_eq!((small[9], large[5 << 20]), (1.0, 7));
    }
}
