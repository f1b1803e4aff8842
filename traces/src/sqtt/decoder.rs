//! The streaming packet decoder: a 64-bit window over the nibble stream, one table lookup per
//! packet, no allocation per packet.

use super::packets::{Layout, PacketType, Table, TimeRule, CDNA_TABLE, RDNA3_TABLE, RDNA4_TABLE};

/// How packets are framed where the reference decoder and the hardware evidence part ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Frame exactly as tinygrad's decoder of May 2026 (`decoder_2026_05` in the reference
    /// captures): TS_DELTA_S8_W3 is 72 bits on every layout, decoding stops once fewer than 16
    /// nibbles are left after a packet's start, and a packet longer than 16 nibbles that starts
    /// on a byte boundary shifts the stream the way that decoder's window does. This is the
    /// default because it is the form every existing tool's output can be compared with.
    #[default]
    Reference,
    /// Frame as the hardware evidence says (`docs/sqtt-format.md` §9.2): TS_DELTA_S8_W3 is
    /// 64 bits on layout 3 and 72 on layout 4, long packets never desynchronise the stream, and
    /// packets in the final 16 nibbles are decoded as long as they fit in the blob.
    Hardware,
}

/// Decoder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    pub framing: Framing,
    /// What TS_DELTA_SHORT adds on top of its 4-bit field. tinygrad used 8 until May 2026 and 4
    /// since ("match AMD's decoder"); the realtime markers cannot tell the two apart on the
    /// captures we have (the difference is 4 cycles per packet, well under the markers'
    /// 40 ns quantum within a marker interval), so we keep 4, the rule AMD's own decoder and the
    /// reference decode use. See `wavescope sqtt-clock` for the measurement.
    pub short_delta_offset: u8,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { framing: Framing::Reference, short_delta_offset: 4 }
    }
}

/// One decoded packet. `raw` holds the packet's first 64 bits (its fields never reach higher).
#[derive(Clone, Copy)]
pub struct Packet {
    /// Offset of the packet's first nibble from the start of the blob.
    pub offset: u64,
    /// The accumulated time after this packet's own delta (shader clock cycles from the blob's
    /// start; CDNA timestamps may re-anchor it, which is why it is signed).
    pub time: i64,
    pub raw: u64,
    pub ty: &'static PacketType,
    /// The size this packet was framed with, in nibbles.
    pub nibbles: u8,
}

impl Packet {
    #[inline]
    pub fn name(&self) -> &'static str {
        self.ty.name
    }

    /// The value of a field with the given role, if the type has one.
    #[inline]
    pub fn get(&self, role: super::packets::Role) -> Option<u64> {
        self.ty.field(role).map(|f| f.get(self.raw))
    }

    /// All printable fields with their values, in canonical order.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.ty.fields.iter().map(move |f| (f.name, f.get(self.raw)))
    }

    /// True for a TS_DELTA_OR_MARK packet that carries the realtime clock (`rt=1, pl=0`).
    #[inline]
    pub fn is_marker(&self) -> bool {
        self.ty.time == TimeRule::DeltaOrMarker && is_marker(self.ty, self.raw)
    }
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{} t={}", self.ty.name, self.offset, self.time)?;
        for (k, v) in self.fields() {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

#[inline(always)]
fn is_marker(ty: &PacketType, raw: u64) -> bool {
    let rt = ty.field(super::packets::Role::Rt).map_or(0, |f| f.get(raw));
    let pl = ty.field(super::packets::Role::Pl).map_or(0, |f| f.get(raw));
    rt == 1 && pl == 0
}

/// Iterator over the packets of one SE blob.
///
/// It keeps the same window state as the reference decoder (a 64-bit register refilled by the
/// previous packet's size) so that framing quirks are reproduced exactly in
/// [`Framing::Reference`]; in [`Framing::Hardware`] the window is simply re-read at each
/// packet's true position.
#[derive(Clone)]
pub struct Decoder<'a> {
    data: &'a [u8],
    opts: DecodeOptions,
    table: &'static Table,
    /// The 64-bit window: the next 16 nibbles of the stream as the decoder sees it.
    reg: u64,
    /// Next byte to read, and whether its low nibble was already read.
    pos: usize,
    nib_off: usize,
    /// Nibbles to shift in before the next packet (the previous packet's size).
    nib_count: usize,
    time: i64,
    ts_offset: Option<i64>,
    /// Logical offset of the next packet (sum of the sizes so far).
    offset: u64,
    /// Hardware framing: the physical nibble position of the next packet.
    hw_pos: u64,
    /// Reference framing: the logical offset at which the window quirk skipped a byte.
    desync_at: Option<u64>,
    /// Hardware framing: a packet at this offset did not fit in the blob.
    cut: Option<Cut>,
    done: bool,
}

/// A packet cut off by the end of the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub offset: u64,
    pub name: &'static str,
    pub needed: u8,
    pub available: u64,
}

/// What the nibbles after the last decoded packet hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tail {
    /// Whole packets (other than NOP padding) the reference framing leaves unread.
    pub packets: u32,
    /// A packet that does not fit in the blob.
    pub cut: Option<Cut>,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8], opts: DecodeOptions) -> Self {
        Decoder {
            data,
            opts,
            table: &RDNA3_TABLE,
            reg: 0,
            pos: 0,
            nib_off: 0,
            nib_count: 16,
            time: 0,
            ts_offset: None,
            offset: 0,
            hw_pos: 0,
            desync_at: None,
            cut: None,
            done: false,
        }
    }

    /// The table family in use (after the layout header has been seen).
    pub fn layout(&self) -> Layout {
        self.table.layout
    }

    /// Nibbles consumed so far (the logical offset just past the last packet).
    pub fn consumed_nibbles(&self) -> u64 {
        self.offset
    }

    pub fn blob_nibbles(&self) -> u64 {
        self.data.len() as u64 * 2
    }

    /// Reference framing: where the decoder's window skipped a byte after a packet longer than
    /// 16 nibbles that started on a byte boundary (the stream is misread from there on).
    pub fn desync_at(&self) -> Option<u64> {
        self.desync_at
    }

    /// After the iterator ended: what is left in the blob. Decodes the remaining nibbles with
    /// hardware framing (when the reference framing did not desynchronise).
    pub fn tail(&mut self) -> Tail {
        let mut tail = Tail::default();
        if self.opts.framing == Framing::Reference {
            if self.desync_at.is_some() {
                return tail;
            }
            let mut rest = Decoder {
                opts: DecodeOptions { framing: Framing::Hardware, ..self.opts },
                hw_pos: self.offset,
                done: false,
                cut: None,
                ..self.clone()
            };
            for p in rest.by_ref() {
                if p.ty.kind != super::packets::Kind::Nop {
                    tail.packets += 1;
                }
            }
            tail.cut = rest.cut;
        } else {
            tail.cut = self.cut;
        }
        tail
    }

    /// Read `n` (<= 8) little-endian bytes at `at`, zero past the end of the data.
    #[inline(always)]
    fn read_le(&self, at: usize, n: usize) -> u64 {
        if let Some(b) = self.data.get(at..at + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            let v = u64::from_le_bytes(a);
            if n >= 8 {
                v
            } else {
                v & ((1u64 << (n * 8)) - 1)
            }
        } else {
            let mut v = 0u64;
            for i in 0..n {
                v |= (*self.data.get(at + i).unwrap_or(&0) as u64) << (i * 8);
            }
            v
        }
    }

    #[inline(always)]
    fn byte(&self, at: usize) -> u64 {
        *self.data.get(at).unwrap_or(&0) as u64
    }

    /// Shift the previous packet's nibbles into the window, exactly as the reference decoder
    /// does. Returns false when the window would run past the end of the blob.
    #[inline(always)]
    fn refill_reference(&mut self) -> bool {
        let n = self.data.len();
        if self.pos + ((self.nib_count + self.nib_off + 1) >> 1) > n {
            return false;
        }
        let need = self.nib_count - self.nib_off;
        if self.nib_off != 0 {
            self.reg = (self.reg >> 4) | ((self.byte(self.pos) >> 4) << 60);
            self.pos += 1;
        }
        let byte_count = need >> 1;
        if byte_count != 0 {
            // The reference reads at most 8 bytes but advances by `byte_count`: for a packet
            // longer than 16 nibbles starting on a byte boundary this skips a byte.
            let read = byte_count.min(8);
            if byte_count > 8 && self.desync_at.is_none() {
                self.desync_at = Some(self.offset);
            }
            let chunk = self.read_le(self.pos, read);
            self.reg = if read == 8 {
                chunk
            } else {
                (self.reg >> (read * 8)) | (chunk << (64 - read * 8))
            };
            self.pos += byte_count;
        }
        self.nib_off = need & 1;
        if self.nib_off != 0 {
            self.reg = (self.reg >> 4) | ((self.byte(self.pos) & 0xf) << 60);
        }
        true
    }

    /// Hardware framing: the window is the 16 nibbles at the packet's true position, zero past
    /// the end of the data.
    #[inline(always)]
    fn window_at(&self, nibble: u64) -> u64 {
        let byte = (nibble / 2) as usize;
        let lo = self.read_le(byte, 8);
        if nibble & 1 == 0 {
            lo
        } else {
            (lo >> 4) | ((self.byte(byte + 8) & 0xf) << 60)
        }
    }

    #[inline(always)]
    fn size_of(&self, ty: &PacketType) -> u8 {
        if ty.id == 7 && self.opts.framing == Framing::Hardware && self.table.layout == Layout::Rdna3
        {
            super::packets::TS_DELTA_S8_W3_NIBBLES_64
        } else {
            ty.nibbles
        }
    }

    /// Apply a packet's time rule; returns the time after its delta.
    #[inline(always)]
    fn advance_time(&mut self, ty: &PacketType, raw: u64) -> i64 {
        let delta = match ty.delta {
            Some(f) => f.get(raw) as i64,
            None => 0,
        };
        let delta = match ty.time {
            TimeRule::Plain => delta,
            TimeRule::DeltaOrMarker => {
                if is_marker(ty, raw) {
                    0
                } else {
                    delta
                }
            }
            TimeRule::Short => delta + self.opts.short_delta_offset as i64,
            TimeRule::Times4 => delta * 4,
            TimeRule::CdnaTimestamp => {
                self.cdna_timestamp(raw);
                0
            }
        };
        self.time = self.time.wrapping_add(delta);
        self.time
    }

    /// CDNA_TIMESTAMP: when bits [15:4] are zero the packet carries an absolute 48-bit counter;
    /// the first one fixes the offset, later ones replace the time (reference rule, §3.1).
    #[inline]
    fn cdna_timestamp(&mut self, raw: u64) {
        if (raw >> 4) & 0xfff == 0 {
            let abs = (raw >> 16) as i64;
            match self.ts_offset {
                None => self.ts_offset = Some(abs.wrapping_sub(self.time)),
                Some(off) => self.time = (abs.wrapping_sub(off) & !3) - 4,
            }
        }
    }

    /// A LAYOUT_HEADER switches tables: 4 -> RDNA4, 3 -> keep, anything else -> CDNA with the
    /// same 64 bits decoded again by the CDNA table.
    #[inline]
    fn on_layout_header(&mut self, raw: u64) -> &'static PacketType {
        let layout = (raw >> 7) & 0x3f;
        if layout == 4 {
            self.table = &RDNA4_TABLE;
        } else if layout != 3 {
            self.table = &CDNA_TABLE;
            let ty = self.table.lookup(raw as u8);
            if ty.time == TimeRule::CdnaTimestamp && (raw >> 4) & 0xfff == 0 {
                self.ts_offset = Some(((raw >> 16) as i64).wrapping_sub(self.time));
            }
            return ty;
        }
        self.table.lookup(raw as u8)
    }

    #[inline(always)]
    fn next_reference(&mut self) -> Option<Packet> {
        if !self.refill_reference() {
            return None;
        }
        let raw = self.reg;
        let mut ty = self.table.lookup(raw as u8);
        let time = self.advance_time(ty, raw);
        if ty.kind == super::packets::Kind::LayoutHeader {
            ty = self.on_layout_header(raw);
        }
        let size = self.size_of(ty);
        self.nib_count = size as usize;
        let offset = self.offset;
        self.offset += size as u64;
        Some(Packet { offset, time, raw, ty, nibbles: size })
    }

    #[inline(always)]
    fn next_hardware(&mut self) -> Option<Packet> {
        let total = self.blob_nibbles();
        if self.hw_pos >= total {
            return None;
        }
        let raw = self.window_at(self.hw_pos);
        let mut ty = self.table.lookup(raw as u8);
        // The type, and so the size, may change with the layout header: frame with the final one.
        let saved = (self.time, self.ts_offset);
        let time = self.advance_time(ty, raw);
        if ty.kind == super::packets::Kind::LayoutHeader {
            ty = self.on_layout_header(raw);
        }
        let size = self.size_of(ty);
        if self.hw_pos + size as u64 > total {
            // A packet cut off by the end of the blob: stop before it, leaving the state as it
            // was so `consumed_nibbles` points at it.
            self.time = saved.0;
            self.ts_offset = saved.1;
            self.cut = Some(Cut {
                offset: self.hw_pos,
                name: ty.name,
                needed: size,
                available: total - self.hw_pos,
            });
            return None;
        }
        let offset = self.hw_pos;
        self.hw_pos += size as u64;
        self.offset = self.hw_pos;
        Some(Packet { offset, time, raw, ty, nibbles: size })
    }
}

impl Iterator for Decoder<'_> {
    type Item = Packet;

    #[inline]
    fn next(&mut self) -> Option<Packet> {
        if self.done {
            return None;
        }
        let p = match self.opts.framing {
            Framing::Reference => self.next_reference(),
            Framing::Hardware => self.next_hardware(),
        };
        if p.is_none() {
            self.done = true;
        }
        p
    }
}

/// Decode a whole blob with the given options.
pub fn decode(data: &[u8], opts: DecodeOptions) -> Decoder<'_> {
    Decoder::new(data, opts)
}
