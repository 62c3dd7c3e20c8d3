//! Opening the sampling events with perf_event_open (perf-event2): one event
//! per CPU (per thread too when attaching to a running process), every event
//! of a CPU sharing that CPU's ring buffer through PERF_EVENT_IOC_SET_OUTPUT.
//!
//! When a hardware event cannot be opened because no PMU is exposed (ENOENT,
//! ENODEV, EOPNOTSUPP), it is replaced by cpu-clock and the reason recorded.

use crate::db::writer::EventConfig;
use crate::error::{CollectError, Result};
use crate::event_spec::{EventSpec, EventUnit};
use crate::procfs;
use crate::records::SAMPLE_TYPE;
use perf_event::events::Event;
use perf_event::{Builder, Clock, Counter, SampleFlag, SampleSkid, Sampler};
use perf_event_open_sys::bindings::perf_event_attr;
use std::collections::HashMap;
use std::os::fd::AsRawFd;

/// What to sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command dcpi forked (held before exec): inherit + enable on exec.
    Command { pid: u32 },
    /// A running process, every thread.
    Pid { pid: u32 },
    /// Every process on every CPU.
    SystemWide,
}

/// How often to sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// `-c PERIOD`: a fixed period in the event's unit.
    Period(u64),
    /// `-F HZ`: samples per second.
    Frequency(u64),
}

/// Raw encoding for perf-event2's Builder.
pub(crate) struct Encoded {
    pub type_: u32,
    pub config: u64,
}

impl Event for Encoded {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        attr.type_ = self.type_;
        attr.config = self.config;
    }
}

/// The open events of a run.
pub struct OpenEvents {
    /// One ring per CPU index.
    pub rings: Vec<Sampler>,
    /// Counters writing into another counter's ring.
    pub others: Vec<Counter>,
    /// Kernel event id → event position.
    /// Looked up for every sample: an Fx-style hash, not SipHash.
    pub ids: HashMap<u64, u16, crate::fast_hash::FastHash>,
    pub configs: Vec<EventConfig>,
    /// One-line warnings about fallbacks taken.
    pub warnings: Vec<String>,
    /// (fd, base period) of every counter in fixed-period mode, for jitter.
    pub jitter_fds: Vec<(i32, u64)>,
    pub kernel_included: bool,
}

/// Relative half-width of the period randomization.
pub const PERIOD_JITTER: f64 = 0.03;

fn is_no_pmu(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP)
    )
}

fn is_permission(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

/// Default period for `-F HZ` on a clock event (nanoseconds).
fn clock_period(hz: u64) -> u64 {
    (1_000_000_000 / hz.max(1)).max(10_000)
}

struct Plan {
    spec: EventSpec,
    period: Option<u64>,
    frequency: Option<u64>,
}

fn plan_for(spec: &EventSpec, rate: Rate) -> Plan {
    match (rate, spec.unit) {
        (Rate::Frequency(hz), EventUnit::Nanoseconds) => Plan {
            spec: spec.clone(),
            period: Some(clock_period(hz)),
            frequency: None,
        },
        (Rate::Frequency(hz), _) => Plan {
            spec: spec.clone(),
            period: None,
            frequency: Some(hz),
        },
        (Rate::Period(p), _) => Plan {
            spec: spec.clone(),
            period: Some(p.max(1)),
            frequency: None,
        },
    }
}

fn config_for(requested: String, plan: &Plan, fallback_reason: Option<String>) -> EventConfig {
    EventConfig {
        requested,
        used: plan.spec.clone(),
        period: plan.period,
        frequency: plan.frequency,
        period_jitter: if plan.period.is_some() {
            PERIOD_JITTER
        } else {
            0.0
        },
        fallback_reason,
    }
}

#[allow(clippy::too_many_arguments)]
fn builder<'a>(
    plan: &Plan,
    cpu: usize,
    pid: Option<u32>,
    target: &Target,
    sideband: bool,
    include_kernel: bool,
    ring_bytes: usize,
    build_id: bool,
) -> Builder<'a> {
    let mut b = Builder::new(Encoded {
        type_: plan.spec.type_,
        config: plan.spec.config,
    });
    b.one_cpu(cpu);
    match pid {
        Some(p) => b.observe_pid(p as i32),
        None => b.any_pid(),
    };
    b.sample(SampleFlag::from_bits_truncate(SAMPLE_TYPE));
    match (plan.period, plan.frequency) {
        (_, Some(f)) => b.sample_frequency(f),
        (Some(p), _) => b.sample_period(p),
        _ => b.sample_period(1_000_000),
    };
    b.sample_id_all(true);
    b.clockid(Clock::MONOTONIC);
    b.exclude_kernel(!include_kernel);
    b.exclude_hv(true);
    b.precise_ip(match plan.spec.precise {
        0 => SampleSkid::Arbitrary,
        1 => SampleSkid::Constant,
        2 => SampleSkid::RequestZero,
        _ => SampleSkid::RequireZero,
    });
    let command = matches!(target, Target::Command { .. });
    b.inherit(command);
    b.enable_on_exec(command);
    b.enabled(!command);
    if sideband {
        b.mmap(true)
            .mmap2(true)
            .comm(true)
            .comm_exec(true)
            .task(true);
        if build_id {
            b.build_id(true);
        }
    }
    b.wakeup_watermark(ring_bytes / 4);
    b
}

/// Opens `specs` for `target` with fallbacks; `requested` are the user's texts.
pub fn open_events(
    specs: &[EventSpec],
    target: &Target,
    rate: Rate,
    include_kernel: bool,
    ring_bytes: usize,
) -> Result<OpenEvents> {
    let ncpu = dcpi_models::host::online_cpus() as usize;
    let pids: Vec<Option<u32>> = match target {
        Target::Command { pid } => vec![Some(*pid)],
        Target::Pid { pid } => {
            let t = procfs::threads(*pid);
            if t.is_empty() {
                return Err(CollectError::Usage(format!("no process with pid {pid}")));
            }
            t.into_iter().map(Some).collect()
        }
        Target::SystemWide => vec![None],
    };

    // Decide each event (probe on CPU 0), taking the cpu-clock fallback where needed.
    let mut plans: Vec<Plan> = Vec::new();
    let mut configs: Vec<EventConfig> = Vec::new();
    let mut warnings = Vec::new();
    // Requests that map onto an event already opened: recorded after the
    // sampled events, so event positions stay those of the open events.
    let mut unsampled: Vec<EventConfig> = Vec::new();
    let mut build_id = true;
    for requested in specs {
        let mut spec = requested.clone();
        let probe = |plan: &Plan, bid: bool| {
            builder(
                plan,
                0,
                pids[0],
                target,
                true,
                include_kernel,
                ring_bytes,
                bid,
            )
            .build()
        };
        let mut plan = plan_for(&spec, rate);
        let mut result = probe(&plan, build_id);
        if matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EINVAL)) && build_id {
            // Kernels before 5.12 reject build_id in MMAP2; read build-ids from files instead.
            build_id = false;
            result = probe(&plan, false);
        }
        // As perf does: a precise level the PMU lacks falls back to the next lower one.
        let mut precise_note = None;
        while matches!(&result, Err(e) if !is_permission(e)) && spec.precise > 0 {
            spec.precise -= 1;
            plan = plan_for(&spec, rate);
            result = probe(&plan, build_id);
            if result.is_ok() {
                let note = format!(
                    "precise level {} unavailable, using {}",
                    requested.precise, spec.precise
                );
                warnings.push(format!("warning: {}: {note}", requested.display_name()));
                precise_note = Some(note);
            }
        }
        let spec = &spec;
        match result {
            Ok(_) => {
                configs.push(config_for(requested.display_name(), &plan, precise_note));
                plans.push(plan);
            }
            Err(e) if spec.is_hardware() && is_no_pmu(&e) => {
                let reason = format!("no hardware PMU exposed ({e})");
                let fallback = EventSpec::cpu_clock();
                warnings.push(format!(
                    "warning: {} unavailable: {reason}; sampling cpu-clock instead",
                    requested.display_name()
                ));
                let fplan = plan_for(&fallback, rate);
                let config = config_for(requested.display_name(), &fplan, Some(reason));
                if plans.iter().any(|p| p.spec == fallback) {
                    // Already sampling cpu-clock: record the request, open no second event.
                    unsampled.push(config);
                    continue;
                }
                configs.push(config);
                plans.push(fplan);
            }
            Err(e) if is_permission(&e) => {
                return Err(CollectError::Paranoid {
                    paranoid: procfs::perf_event_paranoid(),
                    source: e,
                });
            }
            Err(e) => {
                return Err(CollectError::PerfOpen {
                    event: requested.display_name(),
                    cpu: 0,
                    source: e,
                });
            }
        }
    }

    configs.extend(unsampled);
    let mut rings: Vec<Sampler> = Vec::with_capacity(ncpu);
    let mut others = Vec::new();
    let mut ids: HashMap<u64, u16, crate::fast_hash::FastHash> = HashMap::default();
    let mut jitter_fds = Vec::new();
    for cpu in 0..ncpu {
        let mut ring: Option<Sampler> = None;
        for pid in &pids {
            for (pos, plan) in plans.iter().enumerate() {
                let sideband = pos == 0;
                let counter = builder(
                    plan,
                    cpu,
                    *pid,
                    target,
                    sideband,
                    include_kernel,
                    ring_bytes,
                    build_id,
                )
                .build()
                .map_err(|source| {
                    if is_permission(&source) {
                        CollectError::Paranoid {
                            paranoid: procfs::perf_event_paranoid(),
                            source,
                        }
                    } else {
                        CollectError::PerfOpen {
                            event: plan.spec.display_name(),
                            cpu: cpu as i32,
                            source,
                        }
                    }
                })?;
                ids.insert(counter.id(), pos as u16);
                if let Some(p) = plan.period {
                    jitter_fds.push((counter.as_raw_fd(), p));
                }
                match &ring {
                    None => {
                        let s = counter.sampled(ring_bytes).map_err(|source| {
                            CollectError::PerfSetup {
                                what: format!("mapping the ring buffer of cpu {cpu}"),
                                source,
                            }
                        })?;
                        ring = Some(s);
                    }
                    Some(r) => {
                        share_ring(&counter, r, cpu)?;
                        others.push(counter);
                    }
                }
            }
        }
        if let Some(r) = ring {
            rings.push(r);
        }
    }
    Ok(OpenEvents {
        rings,
        others,
        ids,
        configs,
        warnings,
        jitter_fds,
        kernel_included: include_kernel,
    })
}

/// Every event fd: the ring owners and the counters sharing their rings.
pub fn event_fds(rings: &[Sampler], others: &[Counter]) -> Vec<i32> {
    rings
        .iter()
        .map(|r| r.as_raw_fd())
        .chain(others.iter().map(|c| c.as_raw_fd()))
        .collect()
}

/// Makes `counter` write into `ring` (PERF_EVENT_IOC_SET_OUTPUT; same CPU).
pub fn share_ring(counter: &Counter, ring: &Sampler, cpu: usize) -> Result<()> {
    // SAFETY: both are valid perf event fds on the same CPU.
    let rc = unsafe {
        libc::ioctl(
            counter.as_raw_fd(),
            perf_event_open_sys::bindings::SET_OUTPUT as _,
            ring.as_raw_fd(),
        )
    };
    if rc != 0 {
        return Err(CollectError::PerfSetup {
            what: format!("sharing the ring of cpu {cpu}"),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Sets a new sampling period on an event fd (PERF_EVENT_IOC_PERIOD).
pub fn set_period(fd: i32, period: u64) -> bool {
    let p = period;
    // SAFETY: the ioctl reads a u64 through the pointer.
    unsafe {
        libc::ioctl(
            fd,
            perf_event_open_sys::bindings::PERIOD as _,
            &p as *const u64,
        ) == 0
    }
}

/// Enables or disables an event fd.
pub fn set_enabled(fd: i32, on: bool) {
    let req = if on {
        perf_event_open_sys::bindings::ENABLE
    } else {
        perf_event_open_sys::bindings::DISABLE
    };
    // SAFETY: plain ioctl on a perf fd.
    unsafe {
        libc::ioctl(fd, req as _, 0);
    }
}
