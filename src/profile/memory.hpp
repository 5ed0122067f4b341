#pragma once
// Peak memory of this process: the resident set size (RSS) high-water mark
// from getrusage(RUSAGE_SELF).ru_maxrss. It is physical host memory the
// process touched (weights, activations, buffers, MPI and library pools), not
// virtual memory and not device memory.
namespace wiola::profile {

// Resets the RSS high-water mark (Linux: "5" to /proc/self/clear_refs), so
// the next peak_rss_bytes() covers only what follows. False when the kernel
// does not allow it; the peak then counts from process start.
bool reset_peak_rss();
// The high-water mark in bytes (ru_maxrss is in KiB on Linux).
double peak_rss_bytes();

}  // namespace wiola::profile
