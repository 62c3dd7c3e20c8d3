//! dcpi-analyze: offline analysis of dcpi profile databases.
//!
//! - Images and their procedures (ELF .symtab — the image's own, else its
//!   separate debug file's —, .dynsym with Prospect's bracketing, .eh_frame
//!   FDE ranges, PLT entries, Rust/C++ demangling; the kernel through
//!   /proc/kallsyms), source lines from DWARF (addr2line), separate debug
//!   files found by build-id or .gnu_debuglink, and the `prof` model.
//! - Instruction level: disassembly (iced-x86, AT&T or Intel), per-function
//!   CFGs ([`mod@cfg`]: jump tables, tail and noreturn calls, dominators,
//!   post-dominators, loops, frequency-equivalence classes, and the trip
//!   counts loops state in their code: [`trip_counts`] over the register
//!   constants of [`register_values`]), frequencies from
//!   S = F·C with the pipeline model and flow conservation ([`frequency`],
//!   [`flow_solve`]), functions tied by their calls solved together
//!   ([`linked_functions`]), per-instruction CPI and stall cycles ([`cpi`]), and
//!   DCPI's accuracy measure against callgrind ([`accuracy`]).
//! - The OSprof latency model (histograms, peaks, selection, comparison).
//! - Views: text renderings; JSON is each model's serde form; SVG plots.
//!
//! Limits: an ELF image whose build-id changed since profiling is refused;
//! kernel names need the profiled kernel to be the running one. Frequencies
//! are accurate where code runs near the model's best case and poor where
//! dynamic stalls (cache misses, mispredicts) dominate every block of a
//! region (BENCHMARKS.md, `benches/accuracy_sets.py`: five workloads each
//! recorded fourteen times on Golden Cove, Zen 3, Zen 4 and Zen 5, against
//! callgrind: mean |ln(estimate/true)| 0.124, 69.7 % of samples within
//! 10 % unscaled, 80.1 % with one scale fitted, the mean of the 70 cells;
//! eight more workloads kept out of that mean read worse, 0.20 (eventsim)
//! to 0.92 (matchers: recursion and short calls)); a block's confidence
//! is its solved frequency's posterior standard error, low wherever its
//! estimate rests on a guess. Culprits of
//! one instruction ([`culprits`]) follow DCPI's rules; [`stall_summary`]
//! gives whatcg and topstalls. The known-answer workloads of the culprit
//! analysis (pointer chase, sorted vs random branch, divide chains, store
//! forwarding, I-cache footprint) are recorded: datasets/analyzer/culprits.db
//! and icache.db.
//!
//! ```no_run
//! let report = dcpi_analyze::prof::build("dcpi.db".as_ref(), &Default::default()).unwrap();
//! print!("{}", dcpi_analyze::views::prof_text::render(&report));
//! ```

pub mod accuracy;
pub mod call_sites;
pub mod callgrind;
pub mod cfg;
pub mod cpi;
pub mod culprits;
pub mod demangle;
pub mod disasm;
pub mod elf_symbols;
pub mod error;
pub mod flow_solve;
pub mod frequency;
pub mod function_code;
pub mod function_lookup;
pub mod image;
pub mod image_cpi;
pub mod jit_map;
pub mod kernel_symbols;
pub mod latency;
pub mod linked_functions;
pub mod loop_totals;
pub mod phase_timer;
pub mod prof;
pub mod qualified_name;
pub mod register_values;
pub mod report;
pub mod resident_loads;
pub mod result_use;
pub mod return_charges;
pub mod samples;
pub mod source_lines;
pub mod stall_summary;
pub mod symbolizer;
pub mod trip_counts;
pub mod views;

pub use error::{AnalyzeError, Result};
