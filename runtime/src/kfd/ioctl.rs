//! KFD ioctl requests and argument structs (kfd-interface.md §3). Structs are encoded to and
//! from byte arrays laid out exactly as the C structs (little-endian, no implicit padding), so
//! the real ioctl and the emulated driver share one definition and no transmutes are needed.

pub const AMDKFD_IOC_GET_VERSION: u64 = 0x8008_4B01;
pub const AMDKFD_IOC_CREATE_QUEUE: u64 = 0xC060_4B02;
pub const AMDKFD_IOC_DESTROY_QUEUE: u64 = 0xC008_4B03;
pub const AMDKFD_IOC_CREATE_EVENT: u64 = 0xC020_4B08;
pub const AMDKFD_IOC_DESTROY_EVENT: u64 = 0x4008_4B09;
pub const AMDKFD_IOC_SET_EVENT: u64 = 0x4008_4B0A;
pub const AMDKFD_IOC_WAIT_EVENTS: u64 = 0xC018_4B0C;
pub const AMDKFD_IOC_ACQUIRE_VM: u64 = 0x4008_4B15;
pub const AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: u64 = 0xC028_4B16;
pub const AMDKFD_IOC_FREE_MEMORY_OF_GPU: u64 = 0x4008_4B17;
pub const AMDKFD_IOC_MAP_MEMORY_TO_GPU: u64 = 0xC018_4B18;
pub const AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: u64 = 0xC018_4B19;
pub const AMDKFD_IOC_EXPORT_DMABUF: u64 = 0xC010_4B24;
pub const AMDKFD_IOC_RUNTIME_ENABLE: u64 = 0xC010_4B25;

/// `_IOC` encoding check: size bits 29..16 of the request must equal the struct size.
pub const fn ioc_size(request: u64) -> usize {
    ((request >> 16) & 0x3FFF) as usize
}

/// A user pointer the kernel follows inside an ioctl's argument struct: a u64 address at
/// `ptr_at`, a u32 element count at `count_at`, elements of `elem_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserPtr {
    pub ptr_at: usize,
    pub count_at: usize,
    pub elem_size: usize,
}

/// The user pointers the kernel reads or writes during each KFD request this runtime issues;
/// `None` for any other request (the host platform refuses those). GPU virtual addresses
/// (queue rings, `va_addr`, a user-pointer allocation's address) are not in this list: the
/// kernel maps them for the GPU and never copies through them during the call.
pub fn user_pointers(request: u64) -> Option<&'static [UserPtr]> {
    const EVENTS: &[UserPtr] = &[UserPtr {
        ptr_at: 0,
        count_at: 8,
        elem_size: EventData::SIZE,
    }];
    const DEVICE_IDS: &[UserPtr] = &[UserPtr {
        ptr_at: 8,
        count_at: 16,
        elem_size: 4,
    }];
    match request {
        AMDKFD_IOC_WAIT_EVENTS => Some(EVENTS),
        AMDKFD_IOC_MAP_MEMORY_TO_GPU | AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => Some(DEVICE_IDS),
        AMDKFD_IOC_GET_VERSION
        | AMDKFD_IOC_CREATE_QUEUE
        | AMDKFD_IOC_DESTROY_QUEUE
        | AMDKFD_IOC_CREATE_EVENT
        | AMDKFD_IOC_DESTROY_EVENT
        | AMDKFD_IOC_SET_EVENT
        | AMDKFD_IOC_ACQUIRE_VM
        | AMDKFD_IOC_ALLOC_MEMORY_OF_GPU
        | AMDKFD_IOC_FREE_MEMORY_OF_GPU
        | AMDKFD_IOC_EXPORT_DMABUF => Some(&[]),
        _ => None,
    }
}

pub fn ioctl_name(request: u64) -> &'static str {
    match request {
        AMDKFD_IOC_GET_VERSION => "AMDKFD_IOC_GET_VERSION",
        AMDKFD_IOC_CREATE_QUEUE => "AMDKFD_IOC_CREATE_QUEUE",
        AMDKFD_IOC_DESTROY_QUEUE => "AMDKFD_IOC_DESTROY_QUEUE",
        AMDKFD_IOC_CREATE_EVENT => "AMDKFD_IOC_CREATE_EVENT",
        AMDKFD_IOC_DESTROY_EVENT => "AMDKFD_IOC_DESTROY_EVENT",
        AMDKFD_IOC_SET_EVENT => "AMDKFD_IOC_SET_EVENT",
        AMDKFD_IOC_WAIT_EVENTS => "AMDKFD_IOC_WAIT_EVENTS",
        AMDKFD_IOC_ACQUIRE_VM => "AMDKFD_IOC_ACQUIRE_VM",
        AMDKFD_IOC_ALLOC_MEMORY_OF_GPU => "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
        AMDKFD_IOC_FREE_MEMORY_OF_GPU => "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
        AMDKFD_IOC_MAP_MEMORY_TO_GPU => "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
        AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU",
        AMDKFD_IOC_EXPORT_DMABUF => "AMDKFD_IOC_EXPORT_DMABUF",
        AMDKFD_IOC_RUNTIME_ENABLE => "AMDKFD_IOC_RUNTIME_ENABLE",
        _ => "unknown KFD ioctl",
    }
}

/// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
pub mod mem_flags {
    pub const VRAM: u32 = 1 << 0;
    pub const GTT: u32 = 1 << 1;
    pub const USERPTR: u32 = 1 << 2;
    pub const DOORBELL: u32 = 1 << 3;
    pub const MMIO_REMAP: u32 = 1 << 4;
    pub const CONTIGUOUS: u32 = 1 << 23;
    pub const EXT_COHERENT: u32 = 1 << 24;
    pub const UNCACHED: u32 = 1 << 25;
    pub const COHERENT: u32 = 1 << 26;
    pub const AQL_QUEUE_MEM: u32 = 1 << 27;
    pub const NO_SUBSTITUTE: u32 = 1 << 28;
    pub const PUBLIC: u32 = 1 << 29;
    pub const EXECUTABLE: u32 = 1 << 30;
    pub const WRITABLE: u32 = 1 << 31;
}

pub mod queue_type {
    pub const COMPUTE: u32 = 0;
    pub const SDMA: u32 = 1;
    pub const COMPUTE_AQL: u32 = 2;
}

pub mod event_type {
    pub const SIGNAL: u32 = 0;
    pub const HW_EXCEPTION: u32 = 3;
    pub const MEMORY: u32 = 8;
}

pub const KFD_SIGNAL_EVENT_LIMIT: u32 = 4096;

/// Little-endian field access for the struct codecs.
pub trait Le: Sized + Copy {
    fn put(self, b: &mut [u8], off: usize);
    fn get(b: &[u8], off: usize) -> Option<Self>;
}
impl Le for u32 {
    fn put(self, b: &mut [u8], off: usize) {
        if let Some(s) = b.get_mut(off..off + 4) {
            s.copy_from_slice(&self.to_le_bytes());
        }
    }
    fn get(b: &[u8], off: usize) -> Option<Self> {
        le_reader::Reader::new(b).u32_at(off, "u32 field").ok()
    }
}
impl Le for u64 {
    fn put(self, b: &mut [u8], off: usize) {
        if let Some(s) = b.get_mut(off..off + 8) {
            s.copy_from_slice(&self.to_le_bytes());
        }
    }
    fn get(b: &[u8], off: usize) -> Option<Self> {
        le_reader::Reader::new(b).u64_at(off, "u64 field").ok()
    }
}

macro_rules! kfd_struct {
    ($(#[$m:meta])* $name:ident, $size:expr, { $($field:ident : $ty:ident @ $off:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct $name { $(pub $field: $ty),* }
        impl $name {
            pub const SIZE: usize = $size;
            pub fn to_bytes(&self) -> [u8; $size] {
                let mut b = [0u8; $size];
                $( Le::put(self.$field, &mut b, $off); )*
                b
            }
            pub fn from_bytes(b: &[u8]) -> Option<Self> {
                if b.len() < $size { return None; }
                Some(Self { $($field: <$ty as Le>::get(b, $off)?),* })
            }
        }
    };
}

kfd_struct!(GetVersionArgs, 8, { major: u32 @ 0, minor: u32 @ 4 });
kfd_struct!(CreateQueueArgs, 96, {
    ring_base_address: u64 @ 0, write_pointer_address: u64 @ 8, read_pointer_address: u64 @ 16,
    doorbell_offset: u64 @ 24, ring_size: u32 @ 32, gpu_id: u32 @ 36, queue_type: u32 @ 40,
    queue_percentage: u32 @ 44, queue_priority: u32 @ 48, queue_id: u32 @ 52,
    eop_buffer_address: u64 @ 56, eop_buffer_size: u64 @ 64, ctx_save_restore_address: u64 @ 72,
    ctx_save_restore_size: u32 @ 80, ctl_stack_size: u32 @ 84, sdma_engine_id: u32 @ 88,
});
kfd_struct!(CreateEventArgs, 32, {
    event_page_offset: u64 @ 0, event_trigger_data: u32 @ 8, event_type: u32 @ 12, auto_reset: u32 @ 16,
    node_id: u32 @ 20, event_id: u32 @ 24, event_slot_index: u32 @ 28,
});
kfd_struct!(WaitEventsArgs, 24, {
    events_ptr: u64 @ 0, num_events: u32 @ 8, wait_for_all: u32 @ 12, timeout: u32 @ 16, wait_result: u32 @ 20,
});
kfd_struct!(
    /// `kfd_event_data`: the union is flattened to the memory-exception view (its first 16
    /// bytes double as the hw-exception view, see [`EventData::hw`]).
    EventData, 48, {
    not_present: u32 @ 0, read_only: u32 @ 4, no_execute: u32 @ 8, imprecise: u32 @ 12,
    va: u64 @ 16, gpu_id: u32 @ 24, error_type: u32 @ 28, ext: u64 @ 32, event_id: u32 @ 40,
});
kfd_struct!(AcquireVmArgs, 8, { drm_fd: u32 @ 0, gpu_id: u32 @ 4 });
kfd_struct!(AllocMemoryArgs, 40, {
    va_addr: u64 @ 0, size: u64 @ 8, handle: u64 @ 16, mmap_offset: u64 @ 24, gpu_id: u32 @ 32, flags: u32 @ 36,
});
kfd_struct!(FreeMemoryArgs, 8, { handle: u64 @ 0 });
kfd_struct!(MapMemoryArgs, 24, {
    handle: u64 @ 0, device_ids_array_ptr: u64 @ 8, n_devices: u32 @ 16, n_success: u32 @ 20,
});
kfd_struct!(RuntimeEnableArgs, 16, { r_debug: u64 @ 0, mode_mask: u32 @ 8, capabilities_mask: u32 @ 12 });

/// The hardware-exception view of the `kfd_event_data` union.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HwExceptionData {
    pub reset_type: u32,
    pub reset_cause: u32,
    pub memory_lost: u32,
    pub gpu_id: u32,
}

impl EventData {
    pub fn hw(&self) -> HwExceptionData {
        HwExceptionData {
            reset_type: self.not_present,
            reset_cause: self.read_only,
            memory_lost: self.no_execute,
            gpu_id: self.imprecise,
        }
    }
}

/// Wait results of WAIT_EVENTS.
pub mod wait_result {
    pub const COMPLETE: u32 = 0;
    pub const TIMEOUT: u32 = 1;
    pub const FAIL: u32 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_ioc_encoding() {
        // The request numbers were computed from the C header; their size bits must agree with
        // our layouts, independently of how we wrote the structs.
        assert_eq!(ioc_size(AMDKFD_IOC_CREATE_QUEUE), CreateQueueArgs::SIZE);
        assert_eq!(ioc_size(AMDKFD_IOC_CREATE_EVENT), CreateEventArgs::SIZE);
        assert_eq!(ioc_size(AMDKFD_IOC_WAIT_EVENTS), WaitEventsArgs::SIZE);
        assert_eq!(ioc_size(AMDKFD_IOC_ACQUIRE_VM), AcquireVmArgs::SIZE);
        assert_eq!(
            ioc_size(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU),
            AllocMemoryArgs::SIZE
        );
        assert_eq!(
            ioc_size(AMDKFD_IOC_FREE_MEMORY_OF_GPU),
            FreeMemoryArgs::SIZE
        );
        assert_eq!(ioc_size(AMDKFD_IOC_MAP_MEMORY_TO_GPU), MapMemoryArgs::SIZE);
        assert_eq!(
            ioc_size(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU),
            MapMemoryArgs::SIZE
        );
        assert_eq!(ioc_size(AMDKFD_IOC_RUNTIME_ENABLE), RuntimeEnableArgs::SIZE);
        assert_eq!(ioc_size(AMDKFD_IOC_GET_VERSION), GetVersionArgs::SIZE);
    }

    #[test]
    fn user_pointers_match_the_structs() {
        let w = user_pointers(AMDKFD_IOC_WAIT_EVENTS).unwrap()[0];
        let a = WaitEventsArgs {
            events_ptr: 0x1122,
            num_events: 3,
            ..Default::default()
        }
        .to_bytes();
        assert_eq!(u64::get(&a, w.ptr_at), Some(0x1122));
        assert_eq!(u32::get(&a, w.count_at), Some(3));
        let m = user_pointers(AMDKFD_IOC_MAP_MEMORY_TO_GPU).unwrap()[0];
        let a = MapMemoryArgs {
            device_ids_array_ptr: 0x3344,
            n_devices: 2,
            ..Default::default()
        }
        .to_bytes();
        assert_eq!(u64::get(&a, m.ptr_at), Some(0x3344));
        assert_eq!(u32::get(&a, m.count_at), Some(2));
        assert_eq!(user_pointers(AMDKFD_IOC_RUNTIME_ENABLE), None);
        assert_eq!(user_pointers(0xC008_4B99), None);
    }

    #[test]
    fn roundtrip_and_short_input() {
        let a = AllocMemoryArgs {
            va_addr: 0x1234_5678_9000,
            size: 4096,
            handle: 7,
            mmap_offset: 9,
            gpu_id: 3,
            flags: 0x8000_0001,
        };
        let b = a.to_bytes();
        assert_eq!(&b[32..36], &3u32.to_le_bytes());
        assert_eq!(AllocMemoryArgs::from_bytes(&b), Some(a));
        assert_eq!(AllocMemoryArgs::from_bytes(&b[..39]), None);
    }
}
