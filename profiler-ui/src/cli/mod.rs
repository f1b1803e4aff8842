//! One module per subcommand, and what they share: the stdout writer, the "check failed" error
//! (exit code 3) and progress bars.

use std::io::{self, Write};

pub mod capture;
pub mod conform;
pub mod convert;
pub mod decode;
pub mod devices;
pub mod diff;
pub mod disasm;
pub mod export;
pub mod index;
pub mod info;
pub mod open;
pub mod stats;

/// `writeln!` to an [`Out`], the error propagated with `?`.
macro_rules! outln {
    ($o:expr) => {
        writeln!($o)?
    };
    ($o:expr, $($t:tt)*) => {
        writeln!($o, $($t)*)?
    };
}
pub(crate) use outln;

/// Standard output for reports. A reader that stopped reading (`wavescope info x | head`) is not
/// an error: on EPIPE the process ends quietly with status 0, as `head` expects. Other write
/// errors (a full disk) are returned.
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            inner: io::BufWriter::with_capacity(1 << 16, io::stdout().lock()),
        }
    }

    fn quiet_on_epipe<T>(r: io::Result<T>) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
            r => r,
        }
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Self::quiet_on_epipe(self.inner.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Self::quiet_on_epipe(self.inner.write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Self::quiet_on_epipe(self.inner.flush())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        // Whatever is still buffered; a failure here has nowhere to go but the exit path above.
        let _ = self.flush();
    }
}

/// Warns on stderr that `path`'s analysis index (or a part of it) is not used.
pub fn warn_index(path: &std::path::Path, e: &traces::wst::index::IndexError) {
    eprintln!("warning: {}", profiler_ui::data::index_warning(path, e));
}

/// Pretty JSON and a newline on stdout.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut o = Out::new();
    serde_json::to_writer_pretty(&mut o, v)?;
    outln!(o);
    o.flush()?;
    Ok(())
}

/// The command ran, and what it checked did not hold (a kernel's result differs from its CPU
/// reference, a kernel got slower than `--fail-if-slower` allows): exit status 3.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckFailed(pub String);

/// A bar on stderr for `total` steps of `what`; hidden when stderr is not a terminal.
pub fn progress_bar(total: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
    {
        bar.set_style(style.progress_chars("#> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A spinner on stderr for work without a known length; hidden when stderr is not a terminal.
pub fn spinner(what: &str) -> indicatif::ProgressBar {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
