//! A launch's kernel arguments checked against, and laid out by, the code object's own AMDGPU
//! metadata (`amdhsa.kernels[].args`, read by `traces::isa::codeobj`): the explicit arguments
//! the caller gives, in the kernel's parameter order, and the hidden ones the ABI asks the
//! runtime to fill (LLVM AMDGPUUsage, "Code Object V5 Metadata", hidden kernel arguments).
//!
//! A kernel without a metadata note (tinygrad's hand-assembled minimal ELFs) has nothing to
//! check against; [`Layout::legacy`] keeps the old packing for it: buffer addresses, then u32s.

use traces::isa::{Kernel, KernelArg};

/// One explicit argument of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernArg<'a> {
    /// A buffer's virtual address (a `global_buffer` argument).
    Buffer(u64),
    /// A by-value argument's bytes (little-endian).
    Value(&'a [u8]),
}

impl KernArg<'_> {
    fn describe(&self) -> String {
        match self {
            KernArg::Buffer(_) => "a buffer".into(),
            KernArg::Value(b) => format!("a {}-byte value", b.len()),
        }
    }
}

/// A launch whose arguments do not fit the kernel's metadata.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error("kernel {kernel} takes {want} argument(s) ({list}), the launch gives {got}")]
    Count {
        kernel: String,
        want: usize,
        got: usize,
        list: String,
    },
    #[error("kernel {kernel}, argument {index}{}: expected {want}, the launch gives {got}", name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())]
    Kind {
        kernel: String,
        index: usize,
        name: Option<String>,
        want: String,
        got: String,
    },
    #[error("kernel {kernel}, argument {index} ({kind}): offset {offset} and size {size} {problem} (kernarg segment of {segment} bytes)")]
    Layout {
        kernel: String,
        index: usize,
        kind: String,
        offset: u64,
        size: u64,
        problem: &'static str,
        segment: u64,
    },
    #[error("kernel {kernel} needs the hidden argument {kind} ({what}), which this runtime does not provide")]
    Unsupported {
        kernel: String,
        kind: String,
        what: &'static str,
    },
}

/// Hidden arguments the runtime cannot provide: a null pointer there would be a silent wrong
/// run, so the launch is refused instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("hidden_printf_buffer", "printf"),
    (
        "hidden_hostcall_buffer",
        "hostcall, used by printf and malloc",
    ),
    ("hidden_default_queue", "device-side enqueue"),
    ("hidden_completion_action", "device-side enqueue"),
    ("hidden_multigrid_sync_arg", "multi-grid cooperative launch"),
    ("hidden_heap_v1", "device malloc"),
];

/// Hidden arguments filled with zero, which is their meaning for this runtime's launches: no
/// global offset, no dynamic LDS, apertures and queue pointer unused on gfx9+ flat addressing.
const ZERO: &[&str] = &[
    "hidden_none",
    "hidden_global_offset_x",
    "hidden_global_offset_y",
    "hidden_global_offset_z",
    "hidden_dynamic_lds_size",
    "hidden_private_base",
    "hidden_shared_base",
    "hidden_queue_ptr",
];

fn is_hidden(a: &KernelArg) -> bool {
    a.value_kind.starts_with("hidden_")
}

fn describe_arg(a: &KernelArg) -> String {
    let what = match a.value_kind.as_str() {
        "global_buffer" => "a buffer".to_string(),
        "by_value" => format!("a {}-byte value", a.size),
        k => format!("{k} ({} bytes)", a.size),
    };
    match &a.name {
        Some(n) => format!("{n}: {what}"),
        None => what,
    }
}

/// What a kernel expects, from its metadata.
pub struct Layout<'k> {
    kernel: &'k Kernel,
}

impl<'k> Layout<'k> {
    /// None when the code object carries no argument metadata for `kernel`.
    pub fn of(kernel: &'k Kernel) -> Option<Layout<'k>> {
        (!kernel.args.is_empty() || kernel.kernarg_segment_size.is_some())
            .then_some(Layout { kernel })
    }

    /// The explicit arguments, in parameter order.
    pub fn explicit(&self) -> impl Iterator<Item = &'k KernelArg> {
        self.kernel.args.iter().filter(|a| !is_hidden(a))
    }

    fn segment(&self) -> u64 {
        self.kernel
            .kernarg_segment_size
            .unwrap_or(u64::from(self.kernel.descriptor.kernarg_size))
    }

    /// Checks a launch's explicit arguments against the metadata, before anything runs.
    pub fn check(&self, given: &[KernArg]) -> Result<(), ArgError> {
        let k = &self.kernel.name;
        let explicit: Vec<&KernelArg> = self.explicit().collect();
        if explicit.len() != given.len() {
            return Err(ArgError::Count {
                kernel: k.clone(),
                want: explicit.len(),
                got: given.len(),
                list: if explicit.is_empty() {
                    "none".into()
                } else {
                    explicit
                        .iter()
                        .map(|a| describe_arg(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
        let segment = self.segment();
        for (index, a) in self.kernel.args.iter().enumerate() {
            let layout = |problem| ArgError::Layout {
                kernel: k.clone(),
                index,
                kind: a.value_kind.clone(),
                offset: a.offset,
                size: a.size,
                problem,
                segment,
            };
            if a.offset.checked_add(a.size).is_none_or(|e| e > segment) {
                return Err(layout("end past the kernarg segment"));
            }
            // Arguments are naturally aligned (up to 8 bytes) in the kernarg segment.
            let align = a.size.clamp(1, 8).next_power_of_two().min(8);
            if a.size > 0 && a.offset % align != 0 {
                return Err(layout("is not naturally aligned"));
            }
            if let Some((kind, what)) = UNSUPPORTED.iter().find(|(n, _)| *n == a.value_kind) {
                return Err(ArgError::Unsupported {
                    kernel: k.clone(),
                    kind: kind.to_string(),
                    what,
                });
            }
        }
        for (index, (a, g)) in explicit.iter().zip(given).enumerate() {
            let ok = match (a.value_kind.as_str(), g) {
                ("global_buffer", KernArg::Buffer(_)) => a.size == 8,
                ("by_value", KernArg::Value(b)) => b.len() as u64 == a.size,
                _ => false,
            };
            if !ok {
                let want = match a.value_kind.as_str() {
                    "global_buffer" => "a buffer (global_buffer, 8 bytes)".to_string(),
                    "by_value" => format!("a {}-byte value (by_value)", a.size),
                    other => format!("{other} ({} bytes), which a launch cannot give", a.size),
                };
                return Err(ArgError::Kind {
                    kernel: k.clone(),
                    index,
                    name: a.name.clone(),
                    want,
                    got: g.describe(),
                });
            }
        }
        Ok(())
    }

    /// The kernarg segment of a checked launch: explicit arguments at their offsets, the hidden
    /// ones the ABI defines filled from the launch (`grid` in work-groups, `block` in items).
    pub fn build(
        &self,
        given: &[KernArg],
        grid: [u32; 3],
        block: [u32; 3],
    ) -> Result<Vec<u8>, ArgError> {
        self.check(given)?;
        let mut out = vec![0u8; self.segment() as usize];
        let mut put = |a: &KernelArg, bytes: &[u8]| {
            let o = a.offset as usize;
            let n = (a.size as usize).min(bytes.len());
            if let Some(d) = out.get_mut(o..o + n) {
                d.copy_from_slice(&bytes[..n]);
            }
        };
        for (a, g) in self.explicit().zip(given) {
            match g {
                KernArg::Buffer(va) => put(a, &va.to_le_bytes()),
                KernArg::Value(b) => put(a, b),
            }
        }
        let dims = if grid[2] > 1 || block[2] > 1 {
            3u16
        } else if grid[1] > 1 || block[1] > 1 {
            2
        } else {
            1
        };
        for a in self.kernel.args.iter().filter(|a| is_hidden(a)) {
            let axis = |s: &str| match s {
                "x" => Some(0),
                "y" => Some(1),
                "z" => Some(2),
                _ => None,
            };
            let kind = a.value_kind.as_str();
            let (base, ax) = match kind.rsplit_once('_') {
                Some((b, x)) if axis(x).is_some() => (b, axis(x)),
                _ => (kind, None),
            };
            match (base, ax) {
                ("hidden_block_count", Some(i)) => put(a, &grid[i].to_le_bytes()),
                ("hidden_group_size", Some(i)) => put(a, &(block[i] as u16).to_le_bytes()),
                // The grid is whole work-groups: no partial group in any dimension.
                ("hidden_remainder", Some(_)) => put(a, &0u16.to_le_bytes()),
                ("hidden_grid_dims", None) => put(a, &dims.to_le_bytes()),
                _ if ZERO.contains(&kind) => {}
                _ => {
                    return Err(ArgError::Unsupported {
                        kernel: self.kernel.name.clone(),
                        kind: kind.to_string(),
                        what: "a hidden argument this runtime does not know",
                    })
                }
            }
        }
        Ok(out)
    }
}

/// The packing for kernels without metadata: buffer addresses (u64), then u32 values.
pub fn legacy(size: usize, buffers: &[u64], values: &[u32]) -> Vec<u8> {
    crate::kernel::build_kernargs(size, buffers, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(kind: &str, offset: u64, size: u64) -> KernelArg {
        KernelArg {
            name: None,
            offset,
            size,
            value_kind: kind.into(),
        }
    }

    /// `k_add(float *c, const float *a, const float *b, u32 n)` as clang-22 describes it for
    /// gfx1100 (llvm-readelf --notes of examples/workloads/add_mul.gfx1100.hsaco).
    fn k_add() -> Kernel {
        let mut args = vec![
            arg("global_buffer", 0, 8),
            arg("global_buffer", 8, 8),
            arg("global_buffer", 16, 8),
            arg("by_value", 24, 4),
        ];
        for (i, k) in ["x", "y", "z"].iter().enumerate() {
            args.push(arg(
                &format!("hidden_block_count_{k}"),
                32 + 4 * i as u64,
                4,
            ));
        }
        for (i, k) in ["x", "y", "z"].iter().enumerate() {
            args.push(arg(&format!("hidden_group_size_{k}"), 44 + 2 * i as u64, 2));
        }
        for (i, k) in ["x", "y", "z"].iter().enumerate() {
            args.push(arg(&format!("hidden_remainder_{k}"), 50 + 2 * i as u64, 2));
        }
        for (i, k) in ["x", "y", "z"].iter().enumerate() {
            args.push(arg(
                &format!("hidden_global_offset_{k}"),
                72 + 8 * i as u64,
                8,
            ));
        }
        args.push(arg("hidden_grid_dims", 96, 2));
        Kernel {
            name: "k_add".into(),
            entry: 0,
            size: 0,
            descriptor_addr: 0,
            descriptor: Default::default(),
            args,
            kernarg_segment_size: Some(288),
            wavefront_size: Some(32),
            sgpr_count: None,
            vgpr_count: None,
            max_flat_workgroup_size: None,
        }
    }

    #[test]
    fn builds_explicit_and_hidden_arguments_at_their_offsets() {
        let k = k_add();
        let l = Layout::of(&k).unwrap();
        let n = 1000u32.to_le_bytes();
        let b = l
            .build(
                &[
                    KernArg::Buffer(0x1111),
                    KernArg::Buffer(0x2222),
                    KernArg::Buffer(0x3333),
                    KernArg::Value(&n),
                ],
                [16, 2, 1],
                [64, 1, 1],
            )
            .unwrap();
        assert_eq!(b.len(), 288);
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
        assert_eq!([u64_at(0), u64_at(8), u64_at(16)], [0x1111, 0x2222, 0x3333]);
        assert_eq!(u32_at(24), 1000);
        assert_eq!([u32_at(32), u32_at(36), u32_at(40)], [16, 2, 1]);
        assert_eq!([u16_at(44), u16_at(46), u16_at(48)], [64, 1, 1]);
        assert_eq!(u16_at(96), 2, "grid dims");
    }

    #[test]
    fn mismatches_name_the_kernel_the_argument_and_what_was_expected() {
        let k = k_add();
        let l = Layout::of(&k).unwrap();
        let four = 4u32.to_le_bytes();
        let e = l
            .check(&[KernArg::Buffer(1), KernArg::Buffer(2)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("k_add") && e.contains("takes 4") && e.contains("gives 2"),
            "{e}"
        );
        let e = l
            .check(&[
                KernArg::Buffer(1),
                KernArg::Value(&four),
                KernArg::Buffer(3),
                KernArg::Value(&four),
            ])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("k_add, argument 1") && e.contains("expected a buffer"),
            "{e}"
        );
        let e = l
            .check(&[
                KernArg::Buffer(1),
                KernArg::Buffer(2),
                KernArg::Buffer(3),
                KernArg::Value(&[0; 8]),
            ])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument 3") && e.contains("4-byte value") && e.contains("8-byte"),
            "{e}"
        );
    }

    #[test]
    fn refuses_what_it_cannot_provide_and_bad_layouts() {
        let mut k = k_add();
        k.args.push(arg("hidden_hostcall_buffer", 104, 8));
        let n = 1u32.to_le_bytes();
        let given = [
            KernArg::Buffer(1),
            KernArg::Buffer(2),
            KernArg::Buffer(3),
            KernArg::Value(&n),
        ];
        let e = Layout::of(&k).unwrap().check(&given).unwrap_err();
        assert!(e.to_string().contains("hidden_hostcall_buffer"), "{e}");
        let mut k = k_add();
        k.args[3].offset = 26;
        let e = Layout::of(&k).unwrap().check(&given).unwrap_err();
        assert!(e.to_string().contains("aligned"), "{e}");
        let mut k = k_add();
        k.args[3].offset = 286;
        let e = Layout::of(&k).unwrap().check(&given).unwrap_err();
        assert!(e.to_string().contains("past the kernarg segment"), "{e}");
    }
}
