//! Source lines of machine code: the DWARF line table of a code object compiled with `-g`
//! (gimli), and per-line cost rolled up from the instruction table. A code object without
//! line tables says so (an error value), it is never guessed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::InstStat;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("not an ELF file: {0}")]
    Elf(String),
    #[error("no DWARF line table (.debug_line): compile with -g")]
    NoLineTable,
    #[error("DWARF at offset {offset:#x} of {section}: {message}")]
    Dwarf {
        section: &'static str,
        offset: u64,
        message: String,
    },
}

/// One row of the line table: code from `addr` on comes from `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineRow {
    pub addr: u64,
    pub file: String,
    pub line: u32,
}

/// The address-sorted line table of a code object.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LineTable {
    pub rows: Vec<LineRow>,
    /// Ends of sequences: an address at or past one maps to nothing until the next row.
    ends: Vec<u64>,
}

impl LineTable {
    /// Parses the line programs of every unit of `elf`.
    pub fn parse(elf: &[u8]) -> Result<LineTable, SourceError> {
        let obj = goblin::elf::Elf::parse(elf).map_err(|e| SourceError::Elf(e.to_string()))?;
        let section = |name: &str| -> &[u8] {
            obj.section_headers
                .iter()
                .find(|s| obj.shdr_strtab.get_at(s.sh_name) == Some(name))
                .and_then(|s| {
                    let a = s.sh_offset as usize;
                    elf.get(a..a.checked_add(s.sh_size as usize)?)
                })
                .unwrap_or(&[])
        };
        if section(".debug_line").is_empty() {
            return Err(SourceError::NoLineTable);
        }
        let err = |section: &'static str, e: gimli::Error, offset: u64| SourceError::Dwarf {
            section,
            offset,
            message: e.to_string(),
        };
        let dwarf = gimli::Dwarf::load(|id| -> Result<_, gimli::Error> {
            Ok(gimli::EndianSlice::new(
                section(id.name()),
                gimli::LittleEndian,
            ))
        })
        .map_err(|e| err(".debug_info", e, 0))?;
        let mut rows = Vec::new();
        let mut ends = Vec::new();
        let mut units = dwarf.units();
        while let Some(h) = units.next().map_err(|e| err(".debug_info", e, 0))? {
            let at = h.offset().as_debug_info_offset().map_or(0, |o| o.0 as u64);
            let unit = dwarf.unit(h).map_err(|e| err(".debug_info", e, at))?;
            let Some(program) = unit.line_program.clone() else {
                continue;
            };
            let mut it = program.rows();
            while let Some((header, row)) = it.next_row().map_err(|e| err(".debug_line", e, at))? {
                if row.end_sequence() {
                    ends.push(row.address());
                    continue;
                }
                let (Some(file), Some(line)) = (row.file(header), row.line()) else {
                    continue;
                };
                let mut path = String::new();
                if let Some(dir) = file.directory(header) {
                    if let Ok(d) = dwarf.attr_string(&unit, dir) {
                        path.push_str(&d.to_string_lossy());
                    }
                }
                if let Ok(n) = dwarf.attr_string(&unit, file.path_name()) {
                    let n = n.to_string_lossy();
                    if n.starts_with('/') || path.is_empty() {
                        path = n.into_owned();
                    } else {
                        path = format!("{path}/{n}");
                    }
                }
                rows.push(LineRow {
                    addr: row.address(),
                    file: path,
                    line: line.get() as u32,
                });
            }
        }
        rows.sort_by_key(|r| r.addr);
        ends.sort_unstable();
        Ok(LineTable { rows, ends })
    }

    /// The source line of the instruction at `pc`: the last row at or before it, unless a
    /// sequence ends in between.
    pub fn lookup(&self, pc: u64) -> Option<&LineRow> {
        let i = self.rows.partition_point(|r| r.addr <= pc).checked_sub(1)?;
        let row = &self.rows[i];
        let end = self.ends.partition_point(|&e| e <= pc);
        let ended = end > 0 && self.ends[end - 1] > row.addr;
        (!ended).then_some(row)
    }
}

/// Cost of one source line, summed over the instructions that map to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineCost {
    pub file: String,
    pub line: u32,
    pub instructions: usize,
    pub count: u64,
    /// Summed latency of those instructions (cycles).
    pub total: i64,
    pub exposed: i64,
}

/// Rolls the instruction table up to source lines (rows without a PC or a line are skipped).
pub fn line_costs(table: &LineTable, stats: &[InstStat]) -> Vec<LineCost> {
    let mut by: BTreeMap<(String, u32), LineCost> = BTreeMap::new();
    for s in stats {
        let Some(row) = s.pc.and_then(|pc| table.lookup(pc)) else {
            continue;
        };
        let e = by
            .entry((row.file.clone(), row.line))
            .or_insert_with(|| LineCost {
                file: row.file.clone(),
                line: row.line,
                instructions: 0,
                count: 0,
                total: 0,
                exposed: 0,
            });
        e.instructions += 1;
        e.count += s.count;
        e.total += s.total;
        e.exposed += s.exposed;
    }
    by.into_values().collect()
}

/// The line table of kernel run `ki`'s code object, or why there is none.
pub fn kernel_lines(p: &crate::model::Profile, ki: usize) -> Result<LineTable, String> {
    let k = p.kernels.get(ki).ok_or("no such kernel")?;
    let prog = k
        .kern
        .and_then(|kern| p.program_for(k.device, kern))
        .ok_or("the kernel's program is not in the capture")?;
    let elf = prog
        .elf
        .ok_or("the program's code object is not in the capture")?;
    LineTable::parse(p.blob(elf)).map_err(|e| e.to_string())
}

/// Where the source file the line table records as `file` is: the recorded path when it is a
/// file, else `dir/<file name>` for the first of `dirs` that has it; `Err` lists every path
/// tried (the caller says the file is missing, it does not guess).
pub fn find_source(
    file: &str,
    dirs: &[std::path::PathBuf],
) -> Result<std::path::PathBuf, Vec<std::path::PathBuf>> {
    let path = std::path::Path::new(file);
    let tried: Vec<std::path::PathBuf> = std::iter::once(path.to_path_buf())
        .chain(
            path.file_name()
                .into_iter()
                .flat_map(|name| dirs.iter().map(move |d| d.join(name))),
        )
        .collect();
    match tried.iter().find(|p| p.is_file()) {
        Some(p) => Ok(p.clone()),
        None => Err(tried),
    }
}

/// The text of `file:line` when the file is readable at its recorded path or in one of
/// `dirs` (by file name); `None` when it is not found (the caller says so).
pub fn source_text(file: &str, line: u32, dirs: &[std::path::PathBuf]) -> Option<String> {
    let found = find_source(file, dirs).ok()?;
    let text = std::fs::read_to_string(found).ok()?;
    text.lines()
        .nth(line.checked_sub(1)? as usize)
        .map(|s| s.trim_end().to_string())
}
