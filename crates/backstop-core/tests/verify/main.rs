//! Integration tests of verified retry's reading of test output.
//!
//! - `samples`: every runner sample in `tests/data/runners` parses to the run written for it,
//!   and every file there has an entry
//! - `edges`: the input cap, colors, old panic messages, files that failed to load, output no
//!   runner printed
//! - `signatures`: a rerun of one failure gives its signature again; other failures do not
//! - `properties`: outputs that differ only in numbers, durations, times, addresses and ids
//!   give one signature, for every runner

use backstop_core::verify::parse::{TestRun, parse_output};

/// The text of a sample in `tests/data/runners`, by its name without `.txt`.
macro_rules! sample {
    ($name:literal) => {
        include_str!(concat!("../data/runners/", $name, ".txt"))
    };
}

mod edges;
mod properties;
mod samples;
mod signatures;

/// A sample parsed; panics if no runner's summary is found in it.
pub fn parsed(name: &str, text: &str) -> TestRun {
    parse_output(text).unwrap_or_else(|| panic!("{name}: no summary found"))
}
