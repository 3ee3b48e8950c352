"""What several test files share: rule cases, Spark clusters, the emulator's accounts, hostile files,
planted fleets, frames for the Spark stages, and the probes run as child processes."""
