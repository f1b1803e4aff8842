//! The Source pane beside the instruction table: per-line cost from the code object's DWARF
//! line table, the line's text when its file is found (at the path the compiler recorded, or
//! in a directory the user added, or beside the capture), and selection both ways: a click on
//! a line selects its instructions in the table, a click on an instruction selects its line.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use egui::{Align, Color32, RichText, Ui};

use crate::data::source::{find_source, LineTable};
use crate::data::InstStat;

/// The source directories, the files read from them and the selection (one per open capture).
#[derive(Debug, Default)]
pub struct SourceState {
    /// Directories searched, in order, after a file's recorded path (`--source-dir`, the
    /// pane's field, then the capture's own directory).
    pub dirs: Vec<PathBuf>,
    /// The pane's "add directory" field.
    pub dir_edit: String,
    /// The selected source line (file as recorded, line).
    pub selected: Option<(String, u32)>,
    /// PCs of the instructions highlighted in the table.
    pub selected_pcs: BTreeSet<u64>,
    /// Scroll the pane to the selected line / the table to the first selected row next frame.
    pub scroll_source: bool,
    pub scroll_table: bool,
    /// What the last click could not select (an instruction without a line).
    pub note: Option<String>,
    /// Lines of each file read, or every path tried when it was not found.
    files: HashMap<String, Result<Vec<String>, Vec<PathBuf>>>,
}

impl SourceState {
    pub fn new(dirs: Vec<PathBuf>) -> SourceState {
        SourceState {
            dirs,
            ..Default::default()
        }
    }

    /// Forgets the selection (another kernel opened).
    pub fn clear_selection(&mut self) {
        self.selected = None;
        self.selected_pcs.clear();
        self.note = None;
    }

    /// Adds a directory to search; files not found before are looked up again.
    pub fn add_dir(&mut self, dir: PathBuf) {
        if !self.dirs.contains(&dir) {
            self.dirs.insert(0, dir);
        }
        self.files.retain(|_, f| f.is_ok());
    }

    /// The text of `file:line`, or every path where `file` was looked for.
    pub fn text(&mut self, file: &str, line: u32) -> Result<Option<&str>, &[PathBuf]> {
        let dirs = &self.dirs;
        let f = self.files.entry(file.to_string()).or_insert_with(|| {
            let path = find_source(file, dirs)?;
            std::fs::read_to_string(&path)
                .map(|t| t.lines().map(|l| l.trim_end().to_string()).collect())
                .map_err(|_| vec![path])
        });
        match f {
            Ok(lines) => Ok(line
                .checked_sub(1)
                .and_then(|i| lines.get(i as usize))
                .map(|s| s.as_str())),
            Err(tried) => Err(tried),
        }
    }

    /// Selects `file:line` and the instructions of the table that map to it.
    pub fn select_line(&mut self, table: &LineTable, stats: &[InstStat], file: &str, line: u32) {
        self.selected = Some((file.to_string(), line));
        self.selected_pcs = stats
            .iter()
            .filter_map(|s| s.pc)
            .filter(|&pc| {
                table
                    .lookup(pc)
                    .is_some_and(|r| r.file == file && r.line == line)
            })
            .collect();
        self.note = None;
        self.scroll_table = true;
    }

    /// Selects the instruction at `pc` and its source line (none when the table has no row
    /// for it: said in the pane).
    pub fn select_pc(&mut self, table: Option<&LineTable>, pc: Option<u64>) {
        self.selected_pcs = pc.into_iter().collect();
        let row = pc.zip(table).and_then(|(pc, t)| t.lookup(pc));
        self.selected = row.map(|r| (r.file.clone(), r.line));
        self.note = match (pc, row) {
            (None, _) => Some("this instruction has no PC (not mapped to the code object)".into()),
            (Some(pc), None) => Some(format!("0x{pc:x} has no source line in the line table")),
            _ => None,
        };
        self.scroll_source = row.is_some();
    }
}

/// The Source pane: per-line cost with the line's text, the directories searched, and the
/// line selection.
pub fn show(
    ui: &mut Ui,
    lines: Option<&Result<LineTable, String>>,
    stats: &[InstStat],
    st: &mut SourceState,
) {
    let Some(lines) = lines else {
        return;
    };
    let table = match lines {
        Ok(t) => t,
        Err(e) => {
            ui.weak(format!("Source: {e}"));
            return;
        }
    };
    let costs = crate::data::source::line_costs(table, stats);
    egui::CollapsingHeader::new(
        RichText::new(format!("Source: {} lines with cost", costs.len())).strong(),
    )
    .id_salt("source_pane")
    .default_open(true)
    .show(ui, |ui| {
        ui.horizontal(|ui| {
            ui.label("Source directory:");
            let edit = ui.add(
                egui::TextEdit::singleline(&mut st.dir_edit)
                    .id_salt("source_dir_edit")
                    .hint_text("a directory with the kernel's sources")
                    .desired_width(280.0),
            );
            let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("Add directory").clicked() || enter) && !st.dir_edit.trim().is_empty() {
                let d = PathBuf::from(st.dir_edit.trim());
                st.dir_edit.clear();
                st.add_dir(d);
            }
            let dirs: Vec<String> = st.dirs.iter().map(|d| d.display().to_string()).collect();
            ui.weak(format!("searched: recorded path, {}", dirs.join(", ")));
        });
        if let Some(n) = &st.note {
            ui.weak(n);
        }
        let max = costs.iter().map(|c| c.total).max().unwrap_or(1).max(1);
        let mut clicked = None;
        egui::ScrollArea::vertical()
            .id_salt("source_scroll")
            .max_height(180.0)
            .show(ui, |ui| {
                egui::Grid::new("source_lines")
                    .striped(true)
                    .show(ui, |ui| {
                        for h in ["line", "cost clk", "", "exposed", "source"] {
                            ui.strong(h);
                        }
                        ui.end_row();
                        for c in &costs {
                            let name = std::path::Path::new(&c.file)
                                .file_name()
                                .map_or(c.file.clone(), |n| n.to_string_lossy().into_owned());
                            let sel = st
                                .selected
                                .as_ref()
                                .is_some_and(|(f, l)| *f == c.file && *l == c.line);
                            let r = ui
                                .selectable_label(
                                    sel,
                                    RichText::new(format!("{name}:{}", c.line)).monospace(),
                                )
                                .on_hover_text(format!(
                                    "{}\nclick: select its {} instructions in the table",
                                    c.file, c.instructions
                                ));
                            if r.clicked() {
                                clicked = Some((c.file.clone(), c.line));
                            }
                            if sel && st.scroll_source {
                                r.scroll_to_me(Some(Align::Center));
                                st.scroll_source = false;
                            }
                            ui.monospace(c.total.to_string());
                            let (rect, _) = ui
                                .allocate_exact_size(egui::vec2(60.0, 10.0), egui::Sense::hover());
                            ui.painter().rect_filled(
                                egui::Rect::from_min_size(
                                    rect.min,
                                    egui::vec2(
                                        rect.width() * c.total as f32 / max as f32,
                                        rect.height(),
                                    ),
                                ),
                                2.0,
                                Color32::from_rgb(220, 110, 80),
                            );
                            ui.monospace(c.exposed.to_string());
                            match st.text(&c.file, c.line) {
                                Ok(Some(t)) => {
                                    if ui
                                        .selectable_label(sel, RichText::new(t).monospace())
                                        .clicked()
                                    {
                                        clicked = Some((c.file.clone(), c.line));
                                    }
                                }
                                Ok(None) => {
                                    ui.weak(format!("{name} has no line {}", c.line));
                                }
                                Err(tried) => {
                                    let tried: Vec<String> =
                                        tried.iter().map(|p| p.display().to_string()).collect();
                                    ui.weak(format!("{name} not found"))
                                        .on_hover_text(format!("looked in:\n{}", tried.join("\n")));
                                }
                            }
                            ui.end_row();
                        }
                    });
            });
        if let Some((f, l)) = clicked {
            st.select_line(table, stats, &f, l);
        }
    });
}
