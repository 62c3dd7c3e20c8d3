//! dcpi-analyze: offline analysis of dcpi profile databases.
//!
//! Today: images and their procedures (ELF .symtab, .dynsym with Prospect's
//! bracketing, .eh_frame FDE ranges, PLT entries, Rust/C++ demangling; the
//! kernel through /proc/kallsyms), the `prof` model, the OSprof latency model
//! (histograms, peaks, selection, comparison), and the views of those and of
//! the pipeline model (text; JSON is each model's serde form; SVG plots). The instruction-level analysis (CFGs, frequency and CPI from
//! S = F·C, culprits) described in ARCHITECTURE.md is not built yet.
//!
//! Limits: kernel names need the profiled kernel to be the running one (the
//! build-id is checked); an ELF image whose build-id changed since profiling
//! is refused and shown by offset.
//!
//! ```no_run
//! let report = dcpi_analyze::prof::build("dcpi.db".as_ref(), &Default::default()).unwrap();
//! print!("{}", dcpi_analyze::views::prof_text::render(&report));
//! ```

pub mod accuracy;
pub mod callgrind;
pub mod cfg;
pub mod cpi;
pub mod demangle;
pub mod disasm;
pub mod elf_code;
pub mod elf_symbols;
pub mod error;
pub mod flow_solve;
pub mod frequency;
pub mod function_code;
pub mod function_lookup;
pub mod image;
pub mod image_cpi;
pub mod kernel_symbols;
pub mod latency;
pub mod prof;
pub mod samples;
pub mod source_lines;
pub mod symbolizer;
pub mod views;

pub use error::{AnalyzeError, Result};
