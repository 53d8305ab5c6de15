//! Instructions per ring hop, for callgrind: one thread pushes a 128-byte frame into a queue
//! and reads it back, `--hops` times, through the same adapters the latency harness uses.
//!
//! Wall-clock figures of a two-thread hop are noise on a shared machine; the instructions a
//! hop executes are not. Run it twice under callgrind with different `--hops` and divide the
//! difference in instructions by the difference in hops, so start-up cancels out:
//!
//! ```text
//! cargo build --release -p ticklane-bench --bin ring_ops
//! for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/ring_ops --queue ticklane --hops $n 2>&1 | grep 'refs'
//! done
//! ```
//!
//! Single-threaded, every access hits the local cache: this counts the work of a hop, not
//! its cache-line transfers (those are reasoned about in `engine/ring/src/ring.rs`).

use anyhow::{bail, Result};
use clap::Parser;
use ticklane_bench::queues::{QueueKind, QueueUser};
use ticklane_engine::pipeline::{Frame, FrameConsumer, FrameProducer};

/// Pushes and pops one frame at a time, on one thread, through one queue.
#[derive(Parser, Debug)]
#[command(name = "ring_ops")]
struct Args {
    /// Queue (ticklane, rtrb, crossbeam, disruptor).
    #[arg(long, default_value = "ticklane")]
    queue: QueueKind,
    /// Frames pushed and popped.
    #[arg(long, default_value_t = 100_000)]
    hops: u64,
}

/// One push and one read per hop, the frame stamped with its index and checked on the way out.
struct Loop(u64);

impl QueueUser for Loop {
    type Output = Result<u64>;

    fn run<P: FrameProducer + 'static, C: FrameConsumer + 'static>(
        self,
        mut producer: P,
        mut consumer: C,
    ) -> Result<u64> {
        let mut sum = 0u64;
        for i in 1..=self.0 {
            let stamp = std::hint::black_box(i);
            if producer
                .push_with(|f: &mut Frame| f.recv_ns = stamp)
                .is_err()
            {
                bail!("{i}: the queue was full with nothing in it");
            }
            let mut seen = 0;
            let taken = consumer.read_with(64, |f| {
                seen = f.recv_ns;
                false
            });
            if taken != 1 || seen != i {
                bail!("{i}: read {taken} frame(s), stamp {seen}");
            }
            sum = sum.wrapping_add(seen);
        }
        Ok(sum)
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let sum = args.queue.with_queue(1024, Loop(args.hops))?;
    println!(
        "{} hops through {}: sum {sum}",
        args.hops,
        args.queue.name()
    );
    Ok(())
}
