//! dcpi-collect: the data-collection half of dcpi — DCPI's driver, daemon
//! and profile database for Linux/x86-64 on perf_event_open.
//!
//! Data flow: perf ring buffers per CPU → [`driver`] (per-CPU bucketed hash
//! tables of (process instance, pc, event) counts; evictions into a pair of
//! overflow buffers per CPU) → [`daemon`] ((instance, pc) → (image, offset),
//! merge into the epoch, periodic flush) → [`db`] (one SQLite file).
//! [`session::collect`] runs one `dcpi collect`, or continuous mode
//! (`Mode::Continuous`, flushes and epochs on request through [`control`]).
//! [`kernel_links`] follows softirqs, interrupts, work items and wake-ups to
//! charge asynchronous kernel work to the process it served (pkprof).
//!
//! Limits: x86-64 Linux only. Without a hardware PMU (as on the KVM guests
//! this project is built on) hardware events fall back to cpu-clock, with a
//! warning and the fallback recorded in the database. Period randomization
//! applies to fixed-period events and, for inherited events, reaches child
//! processes only when they fork (a kernel limit of PERF_EVENT_IOC_PERIOD).
//! Samples are aggregated without timestamps, so an address range unmapped
//! and remapped inside one process instance resolves to the newer mapping.
//!
//! ```no_run
//! use dcpi_collect::{event_spec, perf_setup::Rate, session::{collect, CollectConfig, Mode}};
//! use std::sync::atomic::AtomicBool;
//! let config = CollectConfig {
//!     db_path: "dcpi.db".into(),
//!     events: event_spec::parse_event_list("cycles").unwrap(),
//!     rate: Rate::Frequency(4000),
//!     mode: Mode::Command(vec!["./loop".into()]),
//!     duration: None,
//!     driver: Default::default(),
//!     ring_bytes: 1 << 20,
//!     include_kernel: None,
//!     controls: None,
//!     kernel_links: false,
//! };
//! static STOP: AtomicBool = AtomicBool::new(false);
//! let outcome = collect(&config, &STOP, &|w| eprintln!("{w}")).unwrap();
//! println!("{} samples", outcome.samples);
//! ```

pub mod address_space;
pub mod control;
pub mod core_share;
pub mod daemon;
pub mod db;
pub mod driver;
pub mod error;
pub mod event_spec;
pub mod fast_hash;
pub mod hashtable;
pub mod images;
pub mod kernel;
pub mod kernel_links;
pub mod latency;
pub mod launcher;
pub mod overflow;
pub mod perf_setup;
pub mod process_tracker;
pub mod procfs;
pub mod records;
pub mod ring_loop;
pub mod sampling_cost;
pub mod self_usage;
pub mod session;
pub mod stats;

pub use error::{CollectError, Result};
