//! The daemon: drains overflow buffers, maps (instance, pc) to (image,
//! offset), merges into the current epoch and flushes to the database.
//!
//! It receives everything from the driver on one channel, in the driver's
//! order, so a mapping is always known before the samples that need it. A
//! buffer is given back right after it is merged in memory; database I/O
//! happens only at flush markers, never while the driver waits for a buffer.

use crate::address_space::{AddressSpaces, Mapping, Resolved};
use crate::control::{Controls, FlushMarker};
use crate::db::writer::{FlushBatch, LatencyDelta, NewProcess, ProcessDelta, ProfileWriter};
use crate::error::Result;
use crate::fast_hash::FastHash;
use crate::images::{ImageRegistry, ImageSlot};
use crate::overflow::{Handoff, HandoffSink};
use crate::process_tracker::{InstanceStart, ProcEvent};
use crate::stats::CollectorStats;
use std::collections::HashMap;
use std::sync::{mpsc, Arc};

/// Messages from the driver.
#[derive(Debug)]
pub enum DaemonMsg {
    Proc(ProcEvent),
    Samples(Handoff),
    /// pkprof charges: (from instance, to instance, pc, event, link, samples).
    Charges(Vec<(u32, u32, u64, u16, crate::kernel_links::Link, u64)>),
    /// Latency buckets to add and the capture's (calls, unpaired, lost) so far.
    Latency(Vec<LatencyDelta>, (u64, u64, u64)),
    /// Every table was drained before this marker: write everything now
    /// (and open a new epoch if the marker says so).
    Flush(Box<CollectorStats>, FlushMarker),
    /// Last flush; the daemon returns after writing it.
    Finish(Box<CollectorStats>, FlushMarker),
}

impl HandoffSink for mpsc::Sender<DaemonMsg> {
    fn hand_off(&mut self, handoff: Handoff) {
        let _ = self.send(DaemonMsg::Samples(handoff));
    }
}

#[derive(Debug, Default)]
struct ProcState {
    announced: bool,
    exited: bool,
    delta: ProcessDelta,
    dirty: bool,
}

/// Daemon-side statistics.
#[derive(Debug, Default, Clone, Copy)]
pub struct DaemonStats {
    pub entries_merged: u64,
    pub unknown_samples: u64,
    pub flushes: u64,
    pub buffers: u64,
    /// Flushes forced because the pending entries reached the bound.
    pub bound_flushes: u64,
}

/// Most (process, image, offset, event) entries the daemon holds between
/// flushes (about 64 B each with the map's overhead: 16 MiB). Beyond it the
/// daemon writes early, so a burst of distinct PCs cannot grow its memory.
pub const MAX_PENDING_ENTRIES: usize = 256 * 1024;

pub struct Daemon {
    writer: ProfileWriter,
    images: ImageRegistry,
    spaces: AddressSpaces,
    procs: HashMap<u32, ProcState, FastHash>,
    /// The most processes tracked at once: the heap they took stays with
    /// the allocator after they exit, so the memory bound counts them.
    peak_procs: usize,
    new_procs: Vec<(u32, NewProcess)>,
    counts: HashMap<(u32, ImageSlot, u64, u16), u64, FastHash>,
    charges: HashMap<(u32, u32, ImageSlot, u64, u16, crate::kernel_links::Link), u64, FastHash>,
    latency: Vec<LatencyDelta>,
    latency_totals: Option<(u64, u64, u64)>,
    pub stats: DaemonStats,
    controls: Option<Arc<Controls>>,
    epochs: u64,
}

impl Daemon {
    pub fn new(writer: ProfileWriter, images: ImageRegistry) -> Self {
        Daemon {
            writer,
            images,
            spaces: AddressSpaces::default(),
            procs: HashMap::default(),
            peak_procs: 0,
            new_procs: Vec::new(),
            counts: HashMap::default(),
            charges: HashMap::default(),
            latency: Vec::new(),
            latency_totals: None,
            stats: DaemonStats::default(),
            controls: None,
            epochs: 1,
        }
    }

    /// Continuous mode: publish status after each flush, open epochs on request.
    pub fn with_controls(mut self, controls: Arc<Controls>) -> Self {
        self.controls = Some(controls);
        self
    }

    /// Runs until `Finish` (or until the driver disappears), then returns the
    /// writer so the session can close the run.
    pub fn run(mut self, rx: mpsc::Receiver<DaemonMsg>) -> Result<(ProfileWriter, DaemonStats)> {
        let r = self.run_loop(rx);
        if let (Err(e), Some(c)) = (&r, &self.controls) {
            let e = e.to_string();
            c.publish(|s| s.error = Some(e));
        }
        r.map(|()| (self.writer, self.stats))
    }

    fn run_loop(&mut self, rx: mpsc::Receiver<DaemonMsg>) -> Result<()> {
        let mut last_stats = Box::<CollectorStats>::default();
        for msg in rx.iter() {
            match msg {
                DaemonMsg::Proc(e) => self.on_proc(e),
                DaemonMsg::Samples(h) => {
                    self.merge(h);
                    if self.counts.len() >= MAX_PENDING_ENTRIES {
                        self.stats.bound_flushes += 1;
                        self.flush(&last_stats, false)?;
                    }
                }
                DaemonMsg::Charges(rows) => {
                    for (from, to, pc, event, link, n) in rows {
                        let (slot, offset) = self.images.kernel_address(pc);
                        *self
                            .charges
                            .entry((from, to, slot, offset, event, link))
                            .or_insert(0) += n;
                    }
                }
                DaemonMsg::Latency(rows, totals) => {
                    self.latency.extend(rows);
                    self.latency_totals = Some(totals);
                }
                DaemonMsg::Flush(stats, marker) => {
                    self.flush(&stats, true)?;
                    self.after_marker(&stats, marker)?;
                    last_stats = stats;
                }
                DaemonMsg::Finish(stats, marker) => {
                    self.flush(&stats, true)?;
                    self.after_marker(&stats, marker)?;
                    return Ok(());
                }
            }
        }
        // The driver died without Finish: keep what we have.
        self.flush(&last_stats, true)
    }

    /// The driver's statistics with the daemon's own.
    fn full_stats(&self, driver: &CollectorStats) -> CollectorStats {
        let mut all = driver.clone();
        all.daemon = self.stats;
        all.images = self.images.len() as u64;
        all
    }

    /// A new epoch if asked; then tell the control server what was written.
    fn after_marker(&mut self, stats: &CollectorStats, marker: FlushMarker) -> Result<()> {
        if marker.new_epoch {
            self.writer.new_epoch()?;
            self.epochs += 1;
        }
        let Some(c) = &self.controls else {
            return Ok(());
        };
        let all = self.full_stats(stats);
        let (run_id, epoch_id, epochs) =
            (self.writer.run_id(), self.writer.epoch_id(), self.epochs);
        let (flushes, bound) = (self.stats.flushes, self.stats.bound_flushes);
        let (live, peak) = (self.procs.len() as u64, self.peak_procs as u64);
        c.publish(|s| {
            s.run_id = run_id;
            s.epoch_id = epoch_id;
            s.epochs = epochs;
            s.flushes = flushes;
            s.bound_flushes = bound;
            s.flushed_request = s.flushed_request.max(marker.request);
            s.last_flush_unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            s.stats = all.as_pairs();
            s.live_processes = live;
            s.peak_processes = peak;
        });
        Ok(())
    }

    fn on_proc(&mut self, e: ProcEvent) {
        match e {
            ProcEvent::Start(InstanceStart {
                serial,
                pid,
                comm,
                parent,
                exec_from,
                inherit_maps,
                cause,
                cmdline,
                time,
            }) => {
                if let Some(p) = inherit_maps {
                    self.spaces.inherit(serial, p);
                }
                self.procs.insert(serial, ProcState::default());
                self.peak_procs = self.peak_procs.max(self.procs.len());
                self.new_procs.push((
                    serial,
                    NewProcess {
                        comm,
                        pid,
                        parent,
                        exec_from,
                        cause: cause.as_str().into(),
                        cmdline,
                        start_ns: time,
                    },
                ));
            }
            ProcEvent::Map {
                serial,
                start,
                len,
                pgoff,
                path,
                inode,
                build_id,
            } => {
                let image = self.images.file(&path, inode, build_id.as_deref());
                self.spaces.map(
                    serial,
                    Mapping {
                        start,
                        end: start + len,
                        pgoff,
                        image,
                    },
                );
            }
            ProcEvent::Rename {
                serial,
                comm,
                cmdline,
            } => {
                if let Some((_, p)) = self.new_procs.iter_mut().find(|(s, _)| *s == serial) {
                    p.comm = comm;
                    p.cmdline = cmdline.or(p.cmdline.take());
                } else if let Some(st) = self.procs.get_mut(&serial) {
                    st.delta.rename = Some(comm);
                    st.delta.cmdline = cmdline;
                    st.dirty = true;
                }
            }
            ProcEvent::Exit { serial, time } => {
                if let Some(st) = self.procs.get_mut(&serial) {
                    st.exited = true;
                    st.delta.end_ns = Some(time);
                    st.dirty = true;
                }
            }
        }
    }

    fn merge(&mut self, h: Handoff) {
        self.stats.buffers += 1;
        for e in &h.entries {
            self.stats.entries_merged += 1;
            let n = e.count as u64;
            let kernel = ImageRegistry::is_kernel_address(e.pc);
            let (slot, offset) = if kernel {
                self.images.kernel_address(e.pc)
            } else {
                match self.spaces.resolve(e.instance, e.pc) {
                    Resolved::Image(slot, off) => (slot, off),
                    Resolved::Unknown => {
                        self.stats.unknown_samples += n;
                        (self.images.unknown(), e.pc)
                    }
                }
            };
            *self
                .counts
                .entry((e.instance, slot, offset, e.event))
                .or_insert(0) += n;
            // An instance no longer tracked was dropped after its exit:
            // a late sample keeps it only until the next flush.
            let st = self.procs.entry(e.instance).or_insert_with(|| ProcState {
                announced: true,
                exited: true,
                ..Default::default()
            });
            if kernel {
                st.delta.kernel_samples += n;
            } else {
                st.delta.user_samples += n;
            }
            st.dirty = true;
        }
        h.give_back();
    }

    /// Writes everything pending in one transaction. At a driver marker
    /// (`at_marker`) every sample of an exited instance has arrived, so its
    /// state is dropped; an early (bounded-memory) flush keeps it.
    fn flush(&mut self, stats: &CollectorStats, at_marker: bool) -> Result<()> {
        self.stats.flushes += 1;
        let mut batch = FlushBatch {
            new_images: self.images.take_pending(),
            new_processes: std::mem::take(&mut self.new_procs),
            latency: std::mem::take(&mut self.latency),
            latency_totals: self.latency_totals,
            ..Default::default()
        };
        for (serial, _) in &batch.new_processes {
            if let Some(st) = self.procs.get_mut(serial) {
                st.announced = true;
            }
        }
        for (serial, st) in self.procs.iter_mut() {
            if st.dirty {
                batch
                    .process_deltas
                    .push((*serial, std::mem::take(&mut st.delta)));
                st.dirty = false;
            }
        }
        batch.counts = self
            .counts
            .drain()
            .map(|((s, i, o, e), n)| (s, i, o, e, n))
            .collect();
        batch.charges = self
            .charges
            .drain()
            .map(|((f, t, i, o, e, l), n)| (f, t, i, o, e, l.label(), n))
            .collect();
        batch.event_totals = stats.event_totals.clone();
        batch.stats = self.full_stats(stats).as_pairs();
        self.writer.flush(&batch)?;
        if !at_marker {
            return Ok(());
        }
        // Everything sampled before this marker is written: exited instances
        // can no longer receive samples.
        let gone: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, s)| s.exited)
            .map(|(k, _)| *k)
            .collect();
        for s in gone {
            self.procs.remove(&s);
            self.spaces.forget(s);
        }
        Ok(())
    }
}
