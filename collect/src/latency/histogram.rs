//! OSprof's logarithmic buckets: bucket b of resolution r holds latencies
//! with floor(r · log2(cycles)) = b, so r = 1 gives one bucket per power of
//! two and r = 2 doubles the density.

/// Bucket of a latency in cycles (latencies below one cycle go to bucket 0).
pub fn bucket_of(cycles: u64, resolution: u32) -> i32 {
    if cycles <= 1 {
        return 0;
    }
    let r = resolution.max(1) as f64;
    (r * (cycles as f64).log2()).floor() as i32
}

/// Lowest latency (cycles) of a bucket.
pub fn bucket_start(bucket: i32, resolution: u32) -> f64 {
    2f64.powf(bucket as f64 / resolution.max(1) as f64)
}

/// Geometric middle of a bucket, in cycles (its representative latency).
pub fn bucket_mid(bucket: i32, resolution: u32) -> f64 {
    2f64.powf((bucket as f64 + 0.5) / resolution.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_start_buckets() {
        assert_eq!(bucket_of(1, 1), 0);
        assert_eq!(bucket_of(2, 1), 1);
        assert_eq!(bucket_of(3, 1), 1);
        assert_eq!(bucket_of(1024, 1), 10);
        assert_eq!(bucket_of(2047, 1), 10);
        assert_eq!(bucket_of(1024, 2), 20);
        assert_eq!(bucket_of(1500, 2), 21, "r = 2 splits each power of two");
        assert_eq!(bucket_start(10, 1), 1024.0);
        assert!((bucket_mid(10, 1) - 1448.15).abs() < 0.1);
    }
}
