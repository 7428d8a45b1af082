package jail

// DevBytes bounds the tmpfs holding the jail's private /dev (device
// binds, links and /dev/shm).
const DevBytes = 1 << 20
