//! The streaming packet decoder: a 64-bit window over the nibble stream, at most one table
//! lookup per packet, no allocation per packet.

use super::packets::{
    places, Info, Layout, PacketType, Places, Rule, Table, TimeRule, CDNA_MISC_INFO, CDNA_TABLE,
    FLAG_CDNA_TIMESTAMP, FLAG_MARKER, FLAG_SPECIAL, RDNA3_BY_LOW5, RDNA3_TABLE, RDNA4_BY_LOW5,
    RDNA4_TABLE,
};

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
        DecodeOptions {
            framing: Framing::Reference,
            short_delta_offset: 4,
        }
    }
}

/// What [`Decoder::for_each_run_into`] hands each packet and its repeat count to.
pub trait RunSink {
    fn run(&mut self, p: &Packet, n: u32);

    /// A run of `n` zero nibbles read by the fast path (RDNA NOP padding, about half of a
    /// stream's packets): `p` is its first NOP, of the table's NOP type ([`super::packets::Kind::Nop`], as the
    /// tables' tests check). A sink that knows what a NOP needs may skip looking at its type.
    #[inline(always)]
    fn nops(&mut self, p: &Packet, n: u32) {
        self.run(p, n)
    }

    /// Whether [`Decoder::for_each_run_into`] builds one loop per layout into this sink, with
    /// the layout, the table and a known packet's type as constants there (what an analysis
    /// that counts and dispatches by type gains from). A closure ([`Decoder::for_each_run`])
    /// keeps one loop: a closure that only sums the packets' counts and times (the decode
    /// benchmarks' loop) ran twice as slow in the per-layout loops with as many instructions
    /// (cause not found; no wait on memory or branch that cachegrind shows).
    const BY_LAYOUT: bool = true;
}

/// A closure as a [`RunSink`] ([`Decoder::for_each_run`]).
struct FnRuns<F>(F);

impl<F: FnMut(&Packet, u32)> RunSink for FnRuns<F> {
    #[inline(always)]
    fn run(&mut self, p: &Packet, n: u32) {
        (self.0)(p, n)
    }

    const BY_LAYOUT: bool = false;
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
    /// Index of `ty` in its family's table, and the family.
    pub index: u8,
    pub layout: Layout,
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

    /// The compute unit of a wave packet: RDNA `wgp | sa << width(wgp)` (the SA bit sits just
    /// above the WGP field: bit 3 on layout 3, bit 4 with layout 4's 4-bit WGPs), CDNA `cu`.
    /// 0 for packets without those fields.
    pub fn cu(&self) -> u16 {
        self.places().cu(self.layout, self.raw)
    }

    /// Where the fields the analysis reads sit in this packet's type.
    #[inline]
    pub fn places(&self) -> &'static Places {
        &places()[self.layout as usize][self.index as usize]
    }

    /// All printable fields with their values, in canonical order.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.ty
            .fields
            .iter()
            .map(move |f| (f.name, f.get(self.raw)))
    }

    /// True for a TS_DELTA_OR_MARK packet that carries the realtime clock (`rt=1, pl=0`).
    #[inline]
    pub fn is_marker(&self) -> bool {
        self.ty.time == TimeRule::DeltaOrMarker && self.places().is_marker(self.raw)
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

/// The reference decoder's own window state, used after its window quirk has fired (see
/// [`Framing::Reference`]); until then the fast reader gives identical results.
#[derive(Clone, Copy, Debug)]
struct Emulation {
    /// The 64-bit window: the next 16 nibbles of the stream as that decoder sees it.
    reg: u64,
    /// Next byte to read, and whether its low nibble was already read.
    pos: usize,
    nib_off: usize,
    /// Nibbles to shift in before the next packet (the previous packet's size).
    nib_count: usize,
}

/// Where the decoder is.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Reading packets at `pos`.
    Stream,
    /// Reference framing after its window quirk fired: the window is emulated exactly.
    Emulated(Emulation),
    Done,
}

/// Iterator over the packets of one SE blob.
///
/// The fast path reads each packet's first 64 bits with one 16-byte load at its nibble
/// position. Most packets (CDNA_MISC on CDNA; on RDNA every type whose low nibble is not 1) are
/// told apart by a branch on their low bits and decoded from constants, so that the position
/// of the next packet comes from the branch predictor rather than from a table lookup (the
/// decoder is bound by that chain of dependent loads otherwise); the others get their type,
/// size and time rule from a 256-entry table indexed by the first byte, with one test of the
/// entry's flags when they only add a delta. A run of zero nibbles (RDNA NOP padding, about half of all packets in real
/// streams) is read once and handed out one NOP at a time from a counter. Everything rare (the
/// last 16 bytes of the blob, layout headers, packets longer than 16 nibbles) goes through the
/// general path, which takes and returns the decoder by value so that the state of a loop over
/// the iterator stays in registers. In [`Framing::Reference`] the one place where the reference
/// decoder's window misbehaves (a packet longer than 16 nibbles on a byte boundary) hands over
/// to an exact emulation of that window.
#[derive(Clone)]
pub struct Decoder<'a> {
    data: &'a [u8],
    /// `data` while the fast path may run (see `fast_slice`), empty otherwise: its bounds
    /// check is the fast path's only test of where the decoder is.
    fast: &'a [u8],
    table: &'static Table,
    /// Physical nibble position of the next packet.
    pos: u64,
    time: i64,
    ts_offset: Option<i64>,
    /// NOPs of the current run still to emit; `pos` points at the first of them.
    pending_nops: u32,
    /// `table.layout`, at hand: which packets the fast path decodes from constants (and on
    /// CDNA a zero low nibble starts a CDNA_MISC packet rather than a run of NOPs).
    layout: Layout,
    /// The blob's length in nibbles.
    total: u64,
    opts: DecodeOptions,
    mode: Mode,
    /// Logical offset of the next packet (sum of the sizes so far; equals `pos` until the
    /// reference quirk fires).
    offset: u64,
    /// Reference framing: the logical offset at which the window quirk skipped a byte.
    desync_at: Option<u64>,
    /// Hardware framing: a packet at this offset did not fit in the blob.
    cut: Option<Cut>,
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
        let mut d = Decoder {
            data,
            fast: &data[..0],
            table: &RDNA3_TABLE,
            pos: 0,
            time: 0,
            ts_offset: None,
            pending_nops: 0,
            layout: Layout::Rdna3,
            total: data.len() as u64 * 2,
            opts,
            mode: Mode::Stream,
            offset: 0,
            desync_at: None,
            cut: None,
        };
        d.fast = d.fast_slice();
        d
    }

    /// The table family in use (after the layout header has been seen).
    pub fn layout(&self) -> Layout {
        self.table.layout
    }

    /// Nibbles consumed so far (the logical offset just past the last packet).
    pub fn consumed_nibbles(&self) -> u64 {
        match self.mode {
            Mode::Emulated(_) => self.offset,
            _ => self.pos,
        }
    }

    pub fn blob_nibbles(&self) -> u64 {
        self.total
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
            let mut rest = self.clone();
            rest.opts.framing = Framing::Hardware;
            rest.mode = Mode::Stream;
            rest.cut = None;
            rest.fast = rest.fast_slice();
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

    /// Eight little-endian bytes at `at`, zero past the end of the data.
    #[inline(always)]
    fn load8(&self, at: usize) -> u64 {
        match self.data.get(at..at + 8) {
            Some(b) => {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                u64::from_le_bytes(a)
            }
            None => {
                let mut v = 0u64;
                for i in 0..8 {
                    v |= (*self.data.get(at + i).unwrap_or(&0) as u64) << (i * 8);
                }
                v
            }
        }
    }

    #[inline(always)]
    fn byte(&self, at: usize) -> u64 {
        *self.data.get(at).unwrap_or(&0) as u64
    }

    /// The 16 nibbles at a nibble position, zero past the end of the data.
    fn window_at(&self, nibble: u64) -> u64 {
        let byte = (nibble / 2) as usize;
        let lo = self.load8(byte);
        if nibble & 1 == 0 {
            lo
        } else {
            (lo >> 4) | ((self.byte(byte + 8) & 0xf) << 60)
        }
    }

    /// A packet's delta under every rule but the CDNA timestamp (no state change).
    #[inline]
    fn delta(&self, info: Info, raw: u64) -> i64 {
        let field = (raw >> info.delta_lo) & info.delta_mask;
        let delta = match info.rule {
            Rule::Marker if (raw >> info.rt_bit) & 1 == 1 && (raw >> info.pl_bit) & 1 == 0 => 0,
            Rule::Short => field + self.opts.short_delta_offset as u64,
            _ => field,
        };
        delta as i64
    }

    /// CDNA_TIMESTAMP: when bits [15:4] are zero the packet carries an absolute 48-bit counter;
    /// the first one fixes the offset, later ones replace the time (reference rule, §3.1).
    fn cdna_timestamp(&mut self, raw: u64) {
        cdna_anchor(raw, &mut self.time, &mut self.ts_offset);
    }

    /// A LAYOUT_HEADER switches tables: 4 -> RDNA4, 3 -> keep, anything else -> CDNA with the
    /// same 64 bits decoded again by the CDNA table.
    fn on_layout_header(&mut self, raw: u64) -> Info {
        let layout = (raw >> 7) & 0x3f;
        if layout == 4 {
            self.table = &RDNA4_TABLE;
        } else if layout != 3 {
            self.table = &CDNA_TABLE;
            let info = self.table.info[raw as u8 as usize];
            if info.rule == Rule::CdnaTimestamp && (raw >> 4) & 0xfff == 0 {
                self.ts_offset = Some(((raw >> 16) as i64).wrapping_sub(self.time));
            }
            return info;
        }
        self.table.info[raw as u8 as usize]
    }

    /// Every rule, for the general path: time, layout switch and the framed size.
    fn classify(&mut self, raw: u64) -> (Info, i64, u8) {
        let mut info = self.table.info[raw as u8 as usize];
        if info.rule == Rule::CdnaTimestamp {
            self.cdna_timestamp(raw);
        }
        self.time = self.time.wrapping_add(self.delta(info, raw));
        let time = self.time;
        if info.rule == Rule::LayoutHeader {
            info = self.on_layout_header(raw);
        }
        let mut size = info.nibbles;
        if size > 16 && self.opts.framing == Framing::Hardware && self.table.layout == Layout::Rdna3
        {
            size = super::packets::TS_DELTA_S8_W3_NIBBLES_64;
        }
        (info, time, size)
    }

    #[inline(always)]
    fn packet(&self, info: &Info, offset: u64, time: i64, raw: u64, size: u8) -> Packet {
        Self::packet_in(info, self.table.layout, offset, time, raw, size)
    }

    /// One of the NOPs of a run after its first (`raw` 0, as the run was read in one go).
    #[inline(always)]
    fn pending_nop(&mut self) -> Packet {
        self.pending_nops -= 1;
        let offset = self.pos;
        self.pos += 1;
        self.packet(&self.table.info[0], offset, self.time, 0, 1)
    }

    /// The fast path of [`Iterator::next`] and of [`Decoder::next_run`]: the packet at `pos`
    /// and its repeat count, or None for the general path. A run of zero nibbles (RDNA NOP
    /// padding) is one packet with the run's length as its count when `RUNS`, else its first
    /// NOP with the rest left in `pending_nops`; every other packet has a count of 1.
    #[inline(always)]
    fn next_fast<const RUNS: bool>(&mut self) -> Option<(Packet, u32)> {
        self.next_fast_nops::<RUNS>().map(|(p, n, _)| (p, n))
    }

    /// [`Decoder::next_fast`], saying whether the packet is a run of zero nibbles (NOPs).
    #[inline(always)]
    fn next_fast_nops<const RUNS: bool>(&mut self) -> Option<(Packet, u32, bool)> {
        let (layout, table) = (self.layout, self.table);
        self.next_fast_in::<RUNS>(layout, table)
    }

    /// [`Decoder::next_fast_nops`] with the stream's layout and table given: the decode loop
    /// ([`Decoder::for_each_run_into`]) passes constants, so a NOP's and a known packet's
    /// type, index and layout are constants in the loop (no load through the table, no test
    /// of the layout per packet) and the sink's per-kind work is chosen where it is built.
    #[inline(always)]
    fn next_fast_in<const RUNS: bool>(
        &mut self,
        layout: Layout,
        table: &'static Table,
    ) -> Option<(Packet, u32, bool)> {
        let pos = self.pos;
        let raw = window16(self.fast, pos)?;
        // Most packets are told apart by a branch on their low 5 bits and decoded from
        // constants: their size (so the next position) does not wait for the table lookup.
        let low5 = raw & 0x1f;
        if low5 & 0xf == 0 {
            if layout == Layout::Cdna {
                return Some((self.typed(&CDNA_MISC_INFO, layout, pos, raw), 1, false));
            }
            // A run of NOPs: zero nibbles from the bottom, 1..=16.
            let run = raw.trailing_zeros() / 4;
            let p = Self::packet_in(&table.info[0], layout, pos, self.time, raw, 1);
            if RUNS {
                self.pos = pos + run as u64;
                return Some((p, run, true));
            }
            self.pending_nops = run - 1;
            self.pos = pos + 1;
            return Some((p, 1, true));
        }
        macro_rules! known {
            ($by:ident: $($n:literal)*) => {
                match low5 {
                    $($n => {
                        let c = const { $by[$n].unwrap() };
                        return Some((self.typed(&c, layout, pos, raw), 1, false));
                    })*
                    _ => {}
                }
            };
        }
        // Every value but a low nibble of 0 or 1 (see the tests of `packets`).
        match layout {
            Layout::Rdna3 => {
                known!(RDNA3_BY_LOW5: 2 3 4 5 6 7 8 9 10 11 12 13 14 15 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
            }
            Layout::Rdna4 => {
                known!(RDNA4_BY_LOW5: 2 3 4 5 6 7 8 9 10 11 12 13 14 15 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
            }
            Layout::Cdna => {}
        }
        let info = &table.info[raw as u8 as usize];
        if info.flags == 0 {
            // Only a delta (NOPs other than zero nibbles have none).
            let time = self.time.wrapping_add(plain_delta(info, raw) as i64);
            self.time = time;
            self.pos = pos + info.nibbles as u64;
            let p = Self::packet_in(info, layout, pos, time, raw, info.nibbles);
            return Some((p, 1, false));
        }
        if info.flags & FLAG_SPECIAL != 0 {
            return None;
        }
        // A possible realtime marker or a CDNA timestamp.
        fast_advance(*info, raw, &mut self.time, &mut self.ts_offset);
        self.pos = pos + info.nibbles as u64;
        let p = Self::packet_in(info, layout, pos, self.time, raw, info.nibbles);
        Some((p, 1, false))
    }

    /// A packet whose type, size and time rule its low bits decided ([`RDNA3_BY_LOW5`],
    /// [`CDNA_MISC_INFO`]), decoded from the constants `c`: its size and time do not wait for
    /// a table lookup (the branch on the bits is predicted instead), and its type needs none.
    #[inline(always)]
    fn typed(&mut self, c: &Info, layout: Layout, pos: u64, raw: u64) -> Packet {
        let time = self.time.wrapping_add(plain_delta(c, raw) as i64);
        self.time = time;
        self.pos = pos + c.nibbles as u64;
        Self::packet_in(c, layout, pos, time, raw, c.nibbles)
    }

    #[inline(always)]
    fn packet_in(
        info: &Info,
        layout: Layout,
        offset: u64,
        time: i64,
        raw: u64,
        size: u8,
    ) -> Packet {
        Packet {
            offset,
            time,
            raw,
            ty: info.ty,
            nibbles: size,
            index: info.index,
            layout,
        }
    }

    /// The next packet and how many times it repeats: NOP padding comes as one packet with a
    /// count (offsets `offset..offset + count`), everything else with a count of 1. This is the
    /// fastest way through a stream for consumers that do not need each NOP on its own.
    ///
    /// The fast path is the per-packet iterator's (see [`Decoder`]), except that a run of zero
    /// nibbles (RDNA NOP padding, about half of all packets in real streams) is one step,
    /// however long. Everything rare goes through the general path, by value as for
    /// [`Iterator::next`].
    #[inline(always)]
    pub fn next_run(&mut self) -> Option<(Packet, u32)> {
        if self.pending_nops == 0 {
            if let Some(r) = self.next_fast::<true>() {
                return Some(r);
            }
        }
        let (d, r) = self.clone().next_run_slow_by_value();
        *self = d;
        r
    }

    /// Call `f` with every packet and its repeat count (as [`Decoder::next_run`] gives them),
    /// to the end of the blob. This is the fastest way through a stream: the loop runs on a
    /// copy of the decoder, so that its state lives in registers.
    #[inline]
    pub fn for_each_run<F: FnMut(&Packet, u32)>(&mut self, f: F) {
        self.for_each_run_into(&mut FnRuns(f))
    }

    /// [`Decoder::for_each_run`] into a [`RunSink`], whose `#[inline(always)]` step is built
    /// into the loop itself: a closure is inlined only while the compiler finds it small, and
    /// a per-packet step out of line is a call per packet.
    #[inline]
    pub fn for_each_run_into<S: RunSink>(&mut self, sink: &mut S) {
        let mut d = self.clone();
        loop {
            if d.pending_nops == 0 {
                // One loop per layout, its table a constant (the layout changes only on the
                // general path, at a LAYOUT_HEADER).
                match d.layout {
                    _ if !S::BY_LAYOUT => {
                        let (layout, table) = (d.layout, d.table);
                        d.fast_runs(sink, layout, table)
                    }
                    Layout::Rdna3 => d.fast_runs(sink, Layout::Rdna3, &RDNA3_TABLE),
                    Layout::Rdna4 => d.fast_runs(sink, Layout::Rdna4, &RDNA4_TABLE),
                    Layout::Cdna => d.fast_runs(sink, Layout::Cdna, &CDNA_TABLE),
                }
            }
            let more;
            (d, more) = d.slow_runs(sink);
            if !more {
                break;
            }
        }
        *self = d;
    }

    /// The fast path of [`Decoder::for_each_run_into`] for a stream of `layout`, whose table
    /// is `table` (constants where it is built in).
    #[inline(always)]
    fn fast_runs<S: RunSink>(&mut self, sink: &mut S, layout: Layout, table: &'static Table) {
        debug_assert!(std::ptr::eq(self.table, table) && self.layout == layout);
        while let Some((p, n, nops)) = self.next_fast_in::<true>(layout, table) {
            match nops {
                true => sink.nops(&p, n),
                false => sink.run(&p, n),
            }
        }
    }

    #[cold]
    fn next_run_slow(&mut self) -> Option<(Packet, u32)> {
        if self.pending_nops > 0 {
            let n = std::mem::take(&mut self.pending_nops);
            let offset = self.pos;
            self.pos += n as u64;
            return Some((self.packet(&self.table.info[0], offset, self.time, 0, 1), n));
        }
        self.next_slow().map(|p| (p, 1))
    }

    /// The general path of [`Decoder::for_each_run`], by value (see
    /// [`Decoder::next_slow_by_value`]): packets go to `f` until the fast path can read at
    /// `pos` again (true) or the blob ends (false). Where every packet needs the general path
    /// (the emulated reference window, a non-default TS_DELTA_SHORT offset) the decoder is
    /// moved once for the whole stretch rather than once per packet.
    #[cold]
    #[inline(never)]
    fn slow_runs<S: RunSink>(mut self, sink: &mut S) -> (Self, bool) {
        loop {
            match self.next_run_slow() {
                Some((p, n)) => sink.run(&p, n),
                None => return (self, false),
            }
            if self.pending_nops == 0 && window16(self.fast, self.pos).is_some() {
                return (self, true);
            }
        }
    }

    /// [`Decoder::next_run_slow`] by value (see [`Decoder::next_slow_by_value`]).
    #[cold]
    #[inline(never)]
    fn next_run_slow_by_value(mut self) -> (Self, Option<(Packet, u32)>) {
        let r = self.next_run_slow();
        (self, r)
    }

    /// The general path's next packet (no NOPs pending), with the fast path re-enabled or
    /// disabled for what follows.
    fn next_slow(&mut self) -> Option<Packet> {
        let p = match self.mode {
            Mode::Stream => self.next_general(),
            Mode::Emulated(e) => self.next_emulated(e),
            Mode::Done => return None,
        };
        if p.is_none() {
            self.mode = Mode::Done;
        }
        self.fast = self.fast_slice();
        self.layout = self.table.layout;
        p
    }

    /// [`Decoder::next_slow`] by value: the decoder is never borrowed by the rare path, so a
    /// loop over [`Iterator::next`] keeps its position, time and table in registers.
    #[cold]
    #[inline(never)]
    fn next_slow_by_value(mut self) -> (Self, Option<Packet>) {
        let p = self.next_slow();
        (self, p)
    }

    /// What the fast path may read: all of the data while reading at `pos` with the default
    /// TS_DELTA_SHORT offset that the tables carry, nothing otherwise.
    fn fast_slice(&self) -> &'a [u8] {
        let data = self.data;
        if matches!(self.mode, Mode::Stream)
            && self.opts.short_delta_offset == super::packets::DEFAULT_SHORT_OFFSET
        {
            data
        } else {
            &data[..0]
        }
    }

    /// Everything else, at `pos`.
    #[cold]
    fn next_general(&mut self) -> Option<Packet> {
        let p = self.pos;
        let fits = match self.opts.framing {
            // The reference decodes a packet only while a whole 16-nibble window fits.
            Framing::Reference => p + 16 <= self.total,
            Framing::Hardware => p < self.total,
        };
        if !fits {
            return None;
        }
        let raw = self.window_at(p);
        let saved = (self.time, self.ts_offset, self.table);
        let (info, time, size) = self.classify(raw);
        if self.opts.framing == Framing::Hardware && p + size as u64 > self.total {
            // Cut off by the end of the blob: stop before it.
            self.cut = Some(Cut {
                offset: p,
                name: self.table.types[info.index as usize].name,
                needed: size,
                available: self.total - p,
            });
            (self.time, self.ts_offset, self.table) = saved;
            return None;
        }
        let offset = p;
        self.offset = p + size as u64;
        self.pos += size as u64;
        if size > 16 && self.opts.framing == Framing::Reference && p.is_multiple_of(2) {
            // The reference window reads 8 bytes but advances 9 here: emulate it from now on.
            self.desync_at = Some(offset);
            let end = p + 16;
            self.mode = Mode::Emulated(Emulation {
                reg: raw,
                pos: (end / 2) as usize,
                nib_off: (end & 1) as usize,
                nib_count: size as usize,
            });
        }
        Some(self.packet(&info, offset, time, raw, size))
    }

    /// The reference decoder's window refill, after its quirk fired. Returns the window, or None
    /// when it would run past the end of the blob.
    fn refill_emulated(&self, e: &mut Emulation) -> Option<u64> {
        let n = self.data.len();
        if e.pos + ((e.nib_count + e.nib_off + 1) >> 1) > n {
            return None;
        }
        let need = e.nib_count - e.nib_off;
        if e.nib_off != 0 {
            e.reg = (e.reg >> 4) | ((self.byte(e.pos) >> 4) << 60);
            e.pos += 1;
        }
        let byte_count = need >> 1;
        if byte_count != 0 {
            // It reads at most 8 bytes but advances by `byte_count`.
            let read = byte_count.min(8);
            let chunk = self.load8(e.pos);
            e.reg = if read == 8 {
                chunk
            } else {
                (e.reg >> (read * 8)) | ((chunk & ((1u64 << (read * 8)) - 1)) << (64 - read * 8))
            };
            e.pos += byte_count;
        }
        e.nib_off = need & 1;
        if e.nib_off != 0 {
            e.reg = (e.reg >> 4) | ((self.byte(e.pos) & 0xf) << 60);
        }
        Some(e.reg)
    }

    #[cold]
    fn next_emulated(&mut self, mut e: Emulation) -> Option<Packet> {
        let raw = self.refill_emulated(&mut e)?;
        let (info, time, size) = self.classify(raw);
        e.nib_count = size as usize;
        self.mode = Mode::Emulated(e);
        let offset = self.offset;
        self.offset += size as u64;
        Some(self.packet(&info, offset, time, raw, size))
    }
}

/// The 16 nibbles at nibble position `pos` with one 16-byte load, or None when those 16 bytes
/// run past the end of `data`.
#[inline(always)]
fn window16(data: &[u8], pos: u64) -> Option<u64> {
    let at = (pos >> 1) as usize;
    let bytes: &[u8; 16] = data.get(at..at + 16)?.try_into().ok()?;
    let both = u128::from_le_bytes(*bytes);
    Some((both >> ((pos as u32 & 1) << 2)) as u64)
}

/// The delta of a packet whose flags are zero (also a marker's or timestamp's before their
/// rule): `((raw >> lo) & mask) + add`.
#[inline(always)]
fn plain_delta(info: &Info, raw: u64) -> u64 {
    ((raw >> info.delta_lo) & info.delta_mask) + info.add
}

#[inline(always)]
fn is_marker_raw(info: Info, raw: u64) -> bool {
    (raw >> info.rt_bit) & 1 == 1 && (raw >> info.pl_bit) & 1 == 0
}

/// The fast path's time rule for one packet: its delta (the default TS_DELTA_SHORT offset is in
/// the table), nothing for a realtime marker, re-anchoring for a CDNA timestamp.
#[inline(always)]
fn fast_advance(info: Info, raw: u64, time: &mut i64, ts_offset: &mut Option<i64>) {
    let mut delta = plain_delta(&info, raw);
    if info.flags & (FLAG_MARKER | FLAG_CDNA_TIMESTAMP) != 0 {
        if info.flags & FLAG_CDNA_TIMESTAMP != 0 {
            cdna_anchor(raw, time, ts_offset);
        } else if is_marker_raw(info, raw) {
            // A realtime marker carries the clock, not a delta.
            delta = 0;
        }
    }
    *time = time.wrapping_add(delta as i64);
}

/// CDNA_TIMESTAMP: when bits [15:4] are zero the packet carries an absolute 48-bit counter; the
/// first one fixes the offset, later ones replace the time (reference rule, §3.1).
#[inline]
fn cdna_anchor(raw: u64, time: &mut i64, ts_offset: &mut Option<i64>) {
    if (raw >> 4) & 0xfff == 0 {
        let abs = (raw >> 16) as i64;
        match *ts_offset {
            None => *ts_offset = Some(abs.wrapping_sub(*time)),
            Some(off) => *time = (abs.wrapping_sub(off) & !3) - 4,
        }
    }
}

impl Iterator for Decoder<'_> {
    type Item = Packet;

    #[inline(always)]
    fn next(&mut self) -> Option<Packet> {
        if self.pending_nops != 0 {
            return Some(self.pending_nop());
        }
        if let Some((p, _)) = self.next_fast::<false>() {
            return Some(p);
        }
        let (d, p) = self.clone().next_slow_by_value();
        *self = d;
        p
    }
}

/// Decode a whole blob with the given options.
pub fn decode(data: &[u8], opts: DecodeOptions) -> Decoder<'_> {
    Decoder::new(data, opts)
}
