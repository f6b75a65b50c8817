//! Transparent huge pages for the large buffers that decoded buckets fill.
//!
//! Decoding writes every bucket into freshly allocated memory, and with 4 KiB
//! pages a fifth of the reading time went to page faults. Where the kernel
//! gives huge pages only on request (`transparent_hugepage=madvise`, the
//! common default), asking for them on buffers of several MiB removes most of
//! those faults. It is only advice: nothing changes where it is refused.

const HUGE_PAGE: usize = 2 << 20;

/// Advises the kernel to back `buffer`'s allocation with huge pages, if it is
/// large; returns whether the kernel took the advice (false for a small
/// buffer, on other systems, and where huge pages are not built in).
pub fn advise<T>(buffer: &Vec<T>) -> bool {
    let bytes = buffer.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE_PAGE {
        return false;
    }
    let start = buffer.as_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    end > aligned && advise_range(aligned, end - aligned)
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, length: usize) -> bool {
    // SAFETY: the range lies inside a live allocation that we own; MADV_HUGEPAGE
    // changes no contents and fails harmlessly where unsupported.
    unsafe { libc::madvise(start as *mut libc::c_void, length, libc::MADV_HUGEPAGE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _length: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping holding `address`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn vm_flags(address: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&address);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.trim().to_owned());
                }
            }
        }
        None
    }

    #[test]
    fn small_buffers_are_not_advised() {
        assert!(!advise(&vec![1.0f64; 10]));
        assert!(!advise(&Vec::<u8>::with_capacity(2 * HUGE_PAGE - 1)));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn advice_taken_marks_the_mapping_for_huge_pages() {
        let mut large = vec![0u8; 9 << 20];
        let taken = advise(&large);
        let middle = large.as_ptr() as usize + (5 << 20);
        // Where the kernel takes the advice, the mapping says so ("hg").
        if taken {
            let flags = vm_flags(middle).expect("the buffer is mapped");
            assert!(flags.split(' ').any(|f| f == "hg"), "VmFlags: {flags}");
        } else {
            assert!(
                !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
                    || std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
                        .is_ok_and(|s| s.contains("[never]"))
            );
        }
        large[5 << 20] = 7;
        assert_eq!(large[5 << 20], 7);
    }
}
