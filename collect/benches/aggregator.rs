//! Aggregator throughput: samples per second the per-CPU hash table, the
//! overflow pair and the daemon (mapping + merge, database flushes included)
//! sustain on a synthetic stream, on one core for the table.
//!
//! The stream: 4 process instances × 20,000 distinct PCs in 4 images, PCs
//! drawn from a skewed distribution (most samples on a few hundred hot PCs,
//! a long tail), like a real profile. Run: cargo bench -p dcpi-collect

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dcpi_collect::daemon::{Daemon, DaemonMsg};
use dcpi_collect::db::writer::{EventConfig, ProfileWriter, RunInfo};
use dcpi_collect::event_spec::EventSpec;
use dcpi_collect::hashtable::SampleTable;
use dcpi_collect::images::ImageRegistry;
use dcpi_collect::kernel::KernelLayout;
use dcpi_collect::overflow::OverflowPair;
use dcpi_collect::process_tracker::{InstanceStart, ProcEvent, StartCause};
use dcpi_collect::stats::CollectorStats;
use std::sync::mpsc;

const SAMPLES: usize = 10_000_000;

fn stream() -> Vec<(u64, u32)> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..SAMPLES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Skew: square a uniform number so small indices dominate.
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let pc_index = (u * u * u * 20_000.0) as u64;
            let instance = 1 + (x % 4) as u32;
            (0x1000 + pc_index * 4, instance)
        })
        .collect()
}

fn table_only(c: &mut Criterion) {
    let s = stream();
    let mut g = c.benchmark_group("aggregator");
    g.throughput(Throughput::Elements(SAMPLES as u64));
    g.sample_size(10);
    g.bench_function("hash table + overflow pair", |b| {
        b.iter(|| {
            let (tx, rx) = mpsc::sync_channel(64);
            let drain = std::thread::spawn(move || {
                let mut n = 0u64;
                for h in rx {
                    let h: dcpi_collect::overflow::Handoff = h;
                    n += h.entries.len() as u64;
                    h.give_back();
                }
                n
            });
            let mut pair = OverflowPair::new(0, 8192, tx);
            let mut t = SampleTable::new(16 * 1024);
            for &(pc, inst) in &s {
                t.record(pc, inst, 0, &mut pair);
            }
            t.drain_all(&mut pair);
            pair.hand_off_partial();
            drop(pair);
            drain.join().unwrap()
        })
    });
    g.bench_function("table + pair + daemon + sqlite", |b| {
        b.iter(|| {
            let dir = tempfile::tempdir().unwrap();
            let mut w = ProfileWriter::open(&dir.path().join("bench.db")).unwrap();
            let host = dcpi_models::host::read();
            w.begin_run(
                &RunInfo {
                    mode: "bench".into(),
                    command: None,
                    target_pid: None,
                    host,
                    kernel_build_id: None,
                    clock: None,
                },
                &[EventConfig {
                    requested: "cpu-clock".into(),
                    used: EventSpec::cpu_clock(),
                    period: Some(100_000),
                    frequency: None,
                    period_jitter: 0.0,
                    fallback_reason: None,
                }],
            )
            .unwrap();
            let (tx, rx) = mpsc::channel();
            let exe = std::env::current_exe()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            for inst in 1..=4u32 {
                tx.send(DaemonMsg::Proc(ProcEvent::Start(InstanceStart {
                    serial: inst,
                    pid: 1000 + inst,
                    comm: "bench".into(),
                    parent: None,
                    exec_from: None,
                    inherit_maps: None,
                    cause: StartCause::Seeded,
                    cmdline: None,
                    time: 0,
                })))
                .unwrap();
                tx.send(DaemonMsg::Proc(ProcEvent::Map {
                    serial: inst,
                    start: 0x1000,
                    len: 0x20_0000,
                    pgoff: 0,
                    path: exe.clone(),
                    inode: 1,
                    build_id: None,
                }))
                .unwrap();
            }
            let daemon = Daemon::new(w, ImageRegistry::new(KernelLayout::default()));
            let d = std::thread::spawn(move || daemon.run(rx).unwrap());
            let mut pair = OverflowPair::new(0, 8192, tx.clone());
            let mut t = SampleTable::new(16 * 1024);
            for (i, &(pc, inst)) in s.iter().enumerate() {
                t.record(pc, inst, 0, &mut pair);
                if i % 2_000_000 == 1_999_999 {
                    // A periodic flush, as the driver does every second.
                    t.drain_all(&mut pair);
                    pair.hand_off_partial();
                    tx.send(DaemonMsg::Flush(Box::default(), Default::default()))
                        .unwrap();
                }
            }
            t.drain_all(&mut pair);
            pair.hand_off_partial();
            tx.send(DaemonMsg::Finish(
                Box::<CollectorStats>::default(),
                Default::default(),
            ))
            .unwrap();
            d.join().unwrap();
            t.stats.hits
        })
    });
    g.finish();
    // Hit rate of the table on this stream.
    let (tx, rx) = mpsc::sync_channel(64);
    let drain = std::thread::spawn(move || {
        for h in rx {
            let h: dcpi_collect::overflow::Handoff = h;
            h.give_back();
        }
    });
    let mut pair = OverflowPair::new(0, 8192, tx);
    let mut t = SampleTable::new(16 * 1024);
    for &(pc, inst) in &s {
        t.record(pc, inst, 0, &mut pair);
    }
    drop(pair);
    drain.join().unwrap();
    println!(
        "hit rate on the synthetic stream: {:.2}% ({} hits, {} misses, {} evictions)",
        100.0 * t.stats.hits as f64 / t.stats.samples as f64,
        t.stats.hits,
        t.stats.misses,
        t.stats.evictions
    );
}

criterion_group!(benches, table_only);
criterion_main!(benches);
