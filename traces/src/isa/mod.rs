//! AMD GPU instruction decoding and disassembly (filled in by the `isa` issue).
