//! Benchmarks: criterion suites in `benches/`, harnesses in `src/bin/`.
