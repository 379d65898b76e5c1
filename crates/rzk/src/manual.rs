//! `rzk completions SHELL` and `rzk man`: shell completion scripts and manual pages rendered
//! from the same clap definitions the binary parses its arguments with, so that neither can
//! drift from the flags it takes (clap_complete, clap_mangen).

use std::io::Write as _;
use std::path::PathBuf;

use crate::error::CliError;

/// The program name the scripts complete and the pages are titled with.
const PROGRAM: &str = "rzk";

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for. Bash: `source <(rzk completions bash)`, or save it as
    /// `/usr/share/bash-completion/completions/rzk`; zsh: a file `_rzk` on `$fpath`; fish:
    /// `~/.config/fish/completions/rzk.fish`.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write rzk.1 and one page per subcommand (rzk-server.1, rzk-elect.1, ...) into this
    /// directory, instead of printing rzk.1 on standard output. Read one with
    /// `man -l rzk-server.1`, or install them in `/usr/local/share/man/man1`.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

/// Prints the completion script of `args.shell` for `cmd`.
///
/// # Errors
/// Standard output cannot be written (a closed pipe).
pub(crate) fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<(), CliError> {
    // Rendered first: the generators panic on a failed write, and a closed pipe is not a bug.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, PROGRAM, &mut script);
    print(&script)
}

/// Prints the manual page of `cmd`, or writes every page into `args.out_dir`.
///
/// # Errors
/// Standard output or the directory cannot be written.
pub(crate) fn man(args: &ManArgs, cmd: clap::Command) -> Result<(), CliError> {
    // As `generate_to` renders the pages, so that the printed rzk.1 is the written one.
    let cmd = cmd.name(PROGRAM).disable_help_subcommand(true);
    match &args.out_dir {
        Some(dir) => std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(cmd, dir))
            .map_err(|e| CliError::runtime(format!("writing pages into {}: {e}", dir.display()))),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| CliError::runtime(format!("rendering the page: {e}")))?;
            print(&page)
        }
    }
}

fn print(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::runtime(format!("writing to standard output: {e}")))
}
