//! Parsing of the perf ring-buffer records dcpi asks for.
//!
//! The collector opens every event with
//! `sample_type = IDENTIFIER | IP | TID | TIME | CPU | PERIOD` and
//! `sample_id_all`, so the layout of every record is fixed and known here; we
//! parse the bytes directly instead of going through a generic parser, which
//! keeps the timestamps of non-sample records (needed to order MMAP2/COMM/
//! FORK/EXIT against samples across CPUs) and allocates only for file names.

/// perf_event_header.type values.
pub const RECORD_MMAP: u32 = 1;
pub const RECORD_LOST: u32 = 2;
pub const RECORD_COMM: u32 = 3;
pub const RECORD_EXIT: u32 = 4;
pub const RECORD_THROTTLE: u32 = 5;
pub const RECORD_FORK: u32 = 7;
pub const RECORD_SAMPLE: u32 = 9;
pub const RECORD_MMAP2: u32 = 10;
pub const RECORD_LOST_SAMPLES: u32 = 13;

/// perf_event_header.misc bits.
pub const MISC_CPUMODE_MASK: u16 = 7;
pub const MISC_KERNEL: u16 = 1;
pub const MISC_USER: u16 = 2;
pub const MISC_COMM_EXEC: u16 = 1 << 13;
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// PERF_SAMPLE_* bits of the sample_type dcpi uses.
pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_CPU: u64 = 1 << 7;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub const SAMPLE_TYPE: u64 =
    SAMPLE_IDENTIFIER | SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD;

/// Size of the sample_id trailer of non-sample records (tid, time, cpu, identifier).
const SAMPLE_ID_LEN: usize = 32;

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub id: u64,
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cpu: u32,
    pub period: u64,
    /// True when the CPU was in kernel mode.
    pub kernel: bool,
}

/// An executable mapping (PERF_RECORD_MMAP2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mmap {
    pub pid: u32,
    pub tid: u32,
    pub addr: u64,
    pub len: u64,
    pub pgoff: u64,
    pub build_id: Option<Vec<u8>>,
    pub dev_ino: Option<(u32, u32, u64)>,
    pub prot: u32,
    pub flags: u32,
    pub filename: String,
}

/// FORK or EXIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub ptid: u32,
}

/// A parsed record with its timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfRecord {
    Sample(Sample),
    Mmap {
        time: u64,
        map: Mmap,
    },
    Comm {
        time: u64,
        pid: u32,
        tid: u32,
        comm: String,
        exec: bool,
    },
    Fork {
        time: u64,
        task: Task,
    },
    Exit {
        time: u64,
        task: Task,
    },
    /// Records the kernel dropped because the ring was full.
    Lost {
        time: u64,
        lost: u64,
    },
    /// Samples the kernel dropped for other reasons.
    LostSamples {
        time: u64,
        lost: u64,
    },
    Throttle {
        time: u64,
    },
    /// A kernel-link tracepoint (pkprof), see [`crate::kernel_links`].
    Link(crate::kernel_links::LinkRecord),
    /// A record type dcpi does not use.
    Other {
        kind: u32,
    },
}

impl PerfRecord {
    /// Timestamp used to order records across CPUs (0 if unknown).
    pub fn time(&self) -> u64 {
        match self {
            PerfRecord::Sample(s) => s.time,
            PerfRecord::Link(l) => l.time,
            PerfRecord::Mmap { time, .. }
            | PerfRecord::Comm { time, .. }
            | PerfRecord::Fork { time, .. }
            | PerfRecord::Exit { time, .. }
            | PerfRecord::Lost { time, .. }
            | PerfRecord::LostSamples { time, .. }
            | PerfRecord::Throttle { time } => *time,
            PerfRecord::Other { .. } => 0,
        }
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let v = self.b.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_ne_bytes(v.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_ne_bytes(v.try_into().ok()?))
    }
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let v = self.b.get(self.at..self.at + n)?;
        self.at += n;
        Some(v)
    }
    /// A NUL-terminated string in the record body, before the sample_id trailer.
    fn cstr_until_trailer(&mut self) -> Option<String> {
        let end = self.b.len().checked_sub(SAMPLE_ID_LEN)?;
        let raw = self.b.get(self.at..end)?;
        let n = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
        self.at = end;
        Some(String::from_utf8_lossy(&raw[..n]).into_owned())
    }
}

/// Time in the sample_id trailer of a non-sample record.
fn trailer_time(body: &[u8]) -> u64 {
    let at = body.len().saturating_sub(SAMPLE_ID_LEN) + 8;
    body.get(at..at + 8)
        .and_then(|v| v.try_into().ok())
        .map(u64::from_ne_bytes)
        .unwrap_or(0)
}

/// Parses a sample of a link tracepoint (`IDENTIFIER | TID | TIME | CPU | RAW`).
pub fn parse_link(body: &[u8], tp: &crate::kernel_links::LinkTracepoint) -> Option<PerfRecord> {
    let mut c = Cursor { b: body, at: 0 };
    let _id = c.u64()?;
    let pid = c.u32()?;
    let tid = c.u32()?;
    let time = c.u64()?;
    let cpu = c.u32()?;
    let _res = c.u32()?;
    let size = c.u32()? as usize;
    let raw = c.bytes(size)?;
    let field = raw.get(tp.offset..tp.offset + tp.width)?;
    let arg = if tp.width == 8 {
        u64::from_ne_bytes(field.try_into().ok()?)
    } else {
        u32::from_ne_bytes(field.try_into().ok()?) as u64
    };
    Some(PerfRecord::Link(crate::kernel_links::LinkRecord {
        point: tp.point,
        pid,
        tid,
        time,
        cpu,
        arg,
    }))
}

/// Parses a record body (the bytes after perf_event_header).
/// Returns `None` for a truncated or malformed record.
pub fn parse(kind: u32, misc: u16, body: &[u8]) -> Option<PerfRecord> {
    let mut c = Cursor { b: body, at: 0 };
    Some(match kind {
        RECORD_SAMPLE => {
            let id = c.u64()?;
            let ip = c.u64()?;
            let pid = c.u32()?;
            let tid = c.u32()?;
            let time = c.u64()?;
            let cpu = c.u32()?;
            let _res = c.u32()?;
            let period = c.u64()?;
            PerfRecord::Sample(Sample {
                id,
                ip,
                pid,
                tid,
                time,
                cpu,
                period,
                kernel: misc & MISC_CPUMODE_MASK == MISC_KERNEL,
            })
        }
        RECORD_MMAP2 => {
            let pid = c.u32()?;
            let tid = c.u32()?;
            let addr = c.u64()?;
            let len = c.u64()?;
            let pgoff = c.u64()?;
            let (build_id, dev_ino) = if misc & MISC_MMAP_BUILD_ID != 0 {
                let raw = c.bytes(24)?;
                let n = (raw[0] as usize).min(20);
                (Some(raw[4..4 + n].to_vec()), None)
            } else {
                let maj = c.u32()?;
                let min = c.u32()?;
                let ino = c.u64()?;
                let _gen = c.u64()?;
                (None, Some((maj, min, ino)))
            };
            let prot = c.u32()?;
            let flags = c.u32()?;
            let filename = c.cstr_until_trailer()?;
            PerfRecord::Mmap {
                time: trailer_time(body),
                map: Mmap {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    build_id,
                    dev_ino,
                    prot,
                    flags,
                    filename,
                },
            }
        }
        RECORD_COMM => {
            let pid = c.u32()?;
            let tid = c.u32()?;
            let comm = c.cstr_until_trailer()?;
            PerfRecord::Comm {
                time: trailer_time(body),
                pid,
                tid,
                comm,
                exec: misc & MISC_COMM_EXEC != 0,
            }
        }
        RECORD_FORK | RECORD_EXIT => {
            let task = Task {
                pid: c.u32()?,
                ppid: c.u32()?,
                tid: c.u32()?,
                ptid: c.u32()?,
            };
            let time = c.u64()?;
            if kind == RECORD_FORK {
                PerfRecord::Fork { time, task }
            } else {
                PerfRecord::Exit { time, task }
            }
        }
        RECORD_LOST => {
            let _id = c.u64()?;
            let lost = c.u64()?;
            PerfRecord::Lost {
                time: trailer_time(body),
                lost,
            }
        }
        RECORD_LOST_SAMPLES => {
            let lost = c.u64()?;
            PerfRecord::LostSamples {
                time: trailer_time(body),
                lost,
            }
        }
        RECORD_THROTTLE => PerfRecord::Throttle { time: c.u64()? },
        other => PerfRecord::Other { kind: other },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn trailer(b: &mut Vec<u8>, pid: u32, time: u64) {
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&0u64.to_ne_bytes());
        b.extend_from_slice(&7u64.to_ne_bytes());
    }

    #[test]
    fn parses_a_sample() {
        let mut b = Vec::new();
        for v in [7u64, 0x401000] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&42u32.to_ne_bytes());
        b.extend_from_slice(&43u32.to_ne_bytes());
        b.extend_from_slice(&999u64.to_ne_bytes());
        b.extend_from_slice(&1u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&250_000u64.to_ne_bytes());
        let r = parse(RECORD_SAMPLE, MISC_USER, &b).unwrap();
        assert_eq!(
            r,
            PerfRecord::Sample(Sample {
                id: 7,
                ip: 0x401000,
                pid: 42,
                tid: 43,
                time: 999,
                cpu: 1,
                period: 250_000,
                kernel: false
            })
        );
        assert!(
            parse(RECORD_SAMPLE, 0, &b[..20]).is_none(),
            "truncated record"
        );
    }

    #[test]
    fn parses_mmap2_with_build_id_and_trailer_time() {
        let mut b = Vec::new();
        b.extend_from_slice(&5u32.to_ne_bytes());
        b.extend_from_slice(&5u32.to_ne_bytes());
        for v in [0x7f00_0000_0000u64, 0x2000, 0x1000] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        let mut u = [0u8; 24];
        u[0] = 20;
        for (i, x) in u[4..24].iter_mut().enumerate() {
            *x = i as u8;
        }
        b.extend_from_slice(&u);
        b.extend_from_slice(&5u32.to_ne_bytes()); // prot
        b.extend_from_slice(&2u32.to_ne_bytes()); // flags
        b.extend_from_slice(b"/usr/lib/libc.so.6\0\0\0\0\0\0");
        trailer(&mut b, 5, 1234);
        match parse(RECORD_MMAP2, MISC_USER | MISC_MMAP_BUILD_ID, &b).unwrap() {
            PerfRecord::Mmap { time, map } => {
                assert_eq!(time, 1234);
                assert_eq!(map.filename, "/usr/lib/libc.so.6");
                assert_eq!(map.build_id.unwrap().len(), 20);
                assert_eq!(
                    (map.addr, map.len, map.pgoff, map.prot),
                    (0x7f00_0000_0000, 0x2000, 0x1000, 5)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_comm_exec_and_fork() {
        let mut b = Vec::new();
        b.extend_from_slice(&9u32.to_ne_bytes());
        b.extend_from_slice(&9u32.to_ne_bytes());
        b.extend_from_slice(b"loop\0\0\0\0");
        trailer(&mut b, 9, 77);
        assert_eq!(
            parse(RECORD_COMM, MISC_COMM_EXEC, &b).unwrap(),
            PerfRecord::Comm {
                time: 77,
                pid: 9,
                tid: 9,
                comm: "loop".into(),
                exec: true
            }
        );
        let mut f = Vec::new();
        for v in [10u32, 9, 10, 9] {
            f.extend_from_slice(&v.to_ne_bytes());
        }
        f.extend_from_slice(&88u64.to_ne_bytes());
        trailer(&mut f, 10, 88);
        assert_eq!(
            parse(RECORD_FORK, 0, &f).unwrap(),
            PerfRecord::Fork {
                time: 88,
                task: Task {
                    pid: 10,
                    ppid: 9,
                    tid: 10,
                    ptid: 9
                }
            }
        );
    }
}
