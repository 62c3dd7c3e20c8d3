//! Text rendering of a pipeline-model analysis, in llvm-mca's spirit:
//! summary, bottleneck and bounds, per-instruction table, timeline.

use dcpi_models::schedule::{Analysis, Simulation, Stall};
use std::fmt::Write;

fn stall_text(s: &Stall) -> String {
    match s {
        Stall::Dependency {
            register,
            producer,
            producer_text,
            latency,
            loop_carried,
        } => format!(
            "{}dep {register} from [{producer}] {producer_text} (lat {latency})",
            if *loop_carried { "loop-carried " } else { "" }
        ),
        Stall::StoreForward { store, latency } => {
            format!("store-forward from [{store}] (lat {latency})")
        }
        Stall::StoreForwardFailed { store, cycles } => {
            format!("store-forward from [{store}] fails (waits its commit, {cycles} cycles)")
        }
        Stall::PortContention { ports } => format!("ports busy ({})", ports.join(",")),
        Stall::UnitBusy { unit } => format!("unit busy ({unit})"),
        Stall::DispatchWidth => "dispatch width".into(),
        Stall::VectorDispatch { per_cycle } => format!("vector dispatch width ({per_cycle}/cycle)"),
        Stall::RobFull => "ROB full".into(),
        Stall::SchedulerFull { entries } => format!("ALU scheduler full ({entries} µops waiting)"),
        Stall::FrontEnd { bytes_per_cycle } => format!("front end ({bytes_per_cycle} B/cycle)"),
        Stall::TakenBranch { per_cycle } => {
            format!("fetched after a taken branch ({per_cycle}/cycle)")
        }
        Stall::FetchLine { line_bytes } => {
            format!("fetched from the next {line_bytes}-byte line (1/cycle)")
        }
        Stall::DenseCode { width, bytes } => {
            format!("dense code ({width}/cycle under {bytes} B)")
        }
        Stall::OpCache {
            entry_ops,
            line_entries,
        } => format!(
            "op cache the slow way: a line a cycle ({line_entries} entries of {entry_ops} ops a fetch)"
        ),
        Stall::RetireWidth { per_cycle } => format!("retire width ({per_cycle}/cycle)"),
        Stall::StoreCommit { per_cycle } => {
            format!("store commit ({per_cycle} line/cycle)")
        }
        Stall::NarrowStoreCommit { cycles } => {
            format!("narrow store to a line just written (commit held {cycles} cycles)")
        }
        Stall::MemoryWrite {
            full_line,
            partial_line,
        } => format!(
            "memory write: two lines still going out ({full_line} cycles a full line, {partial_line} a partial one)"
        ),
    }
}

/// How the figures were measured: exact over whole periods of a steady
/// state, or an average over a run that never settled.
fn simulated(s: &Simulation) -> String {
    let n = s.iterations;
    match (s.steady, s.fixed, s.measured) {
        (true, _, m) => format!("{n} iterations; steady state, measured over the last {m}"),
        (false, _, 0) => format!("{n} iterations; no steady state"),
        (false, true, m) => format!("{n} iterations as asked; averaged over the last {m}"),
        (false, false, m) => {
            format!("{n} iterations; no steady state found: averaged over the last {m}")
        }
    }
}

pub fn render(a: &Analysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Machine:              {}", a.machine);
    let _ = writeln!(out, "Mode:                 {:?}", a.mode);
    let _ = writeln!(out, "Instructions:         {}", a.instructions);
    let _ = writeln!(out, "Cycles per iteration: {:.2}", a.cycles_per_iteration);
    let _ = writeln!(out, "IPC:                  {:.2}", a.ipc);
    let _ = writeln!(out, "Simulated:            {}", simulated(&a.simulation));
    let _ = writeln!(out, "Bottleneck:           {}", a.bottleneck);
    let b = &a.bounds;
    let mut taken = if b.taken_branches > 0.0 {
        format!(", taken branches {:.2}", b.taken_branches)
    } else {
        String::new()
    };
    if b.fetch_lines > 0.0 {
        taken.push_str(&format!(", fetch lines {:.2}", b.fetch_lines));
    }
    if b.op_cache > 0.0 {
        taken.push_str(&format!(", op cache {:.2}", b.op_cache));
    }
    if b.dense_code > 0.0 {
        taken.push_str(&format!(", dense code {:.2}", b.dense_code));
    }
    if b.memory_writes > 0.0 {
        taken.push_str(&format!(", memory writes {:.2}", b.memory_writes));
    }
    let _ = writeln!(
        out,
        "Bounds:               dependency chain {:.2}, dispatch {:.2}, ports {:.2} ({}), front end {:.2}{taken}\n",
        b.dependency_chain, b.dispatch, b.ports, b.busiest_port, b.front_end
    );
    let _ = writeln!(
        out,
        "{:>3} {:<36} {:<10} {:>3} {:>4} {:>6} {:>6}  ports / stalls",
        "#", "instruction", "class", "lat", "uops", "M_i", "wait"
    );
    for i in &a.insns {
        let mut detail = i.ports.join(",");
        for s in i.stalls.iter().take(2) {
            detail.push_str("; ");
            detail.push_str(&stall_text(s));
        }
        for n in &i.notes {
            detail.push_str("; ");
            detail.push_str(n);
        }
        let _ = writeln!(
            out,
            "{:>3} {:<36} {:<10} {:>3} {:>4} {:>6.2} {:>6.2}  {}",
            i.index,
            i.text.chars().take(36).collect::<String>(),
            i.class,
            i.latency,
            i.uops,
            i.m,
            i.wait,
            detail.trim_start_matches("; ")
        );
    }
    // Timeline: D dispatch, = waiting, e executing, E complete, - done, R retire.
    let end = a
        .timeline
        .iter()
        .map(|r| r.retire)
        .max()
        .unwrap_or(0)
        .min(120);
    let _ = writeln!(
        out,
        "\nTimeline (D dispatch, = wait, e execute, E complete, - wait to retire, R retire):"
    );
    for r in &a.timeline {
        let mut line = String::new();
        for c in 0..=end {
            let ch = if c == r.dispatch {
                'D'
            } else if c == r.retire {
                'R'
            } else if c > r.retire || c < r.dispatch {
                ' '
            } else if r.issue.is_some_and(|i| c < i) || (r.issue.is_none() && c < r.complete) {
                '='
            } else if c < r.complete {
                'e'
            } else if c == r.complete {
                'E'
            } else {
                '-'
            };
            line.push(ch);
        }
        let text = &a.insns[r.index].text;
        let _ = writeln!(
            out,
            "[{},{:<2}] {:<width$} {}",
            r.iteration,
            r.index,
            line.trim_end(),
            text,
            width = end as usize + 1
        );
    }
    out
}
