//! `tpsbench publish`: the command line of `report::publish`.

use std::path::PathBuf;

use super::outcome::Outcome;
use crate::report::publish::{Options, command};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The result files to publish.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The machine's name on the board, in place of its host name (default: host- and 8 hex
    /// digits of the host name's SHA-256).
    #[arg(long = "as", value_name = "LABEL")]
    label: Option<String>,
    /// Keep the host name (it is replaced by the label otherwise).
    #[arg(long)]
    keep_host: bool,
    /// The published set to write into.
    #[arg(long, default_value = "results/published")]
    out_dir: PathBuf,
}

impl From<Args> for Options {
    fn from(a: Args) -> Options {
        Options {
            files: a.files,
            label: a.label,
            keep_host: a.keep_host,
            out_dir: a.out_dir,
        }
    }
}

pub(super) fn publish(a: Args) -> Outcome {
    Outcome::of_code(command(&a.into()))
}
