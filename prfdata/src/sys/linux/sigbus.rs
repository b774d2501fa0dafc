//! The process-wide `SIGBUS` handler that lets a reader survive a block truncated under it.
//!
//! Why readers need it, and the table of mappings being read it consults, are documented once,
//! in `block/fault.rs`. Here: the platform part. On a `BUS_ADRERR` fault the handler asks the
//! [`FaultHook`] whether the address belongs to a mapping being read; if so the hook maps
//! anonymous zero pages over that mapping ([`map_zeros`]) and the handler returns, and the
//! faulting load runs again and reads zeros.
//!
//! A fault the hook does not claim goes to the handler that was installed before ours (a
//! Rust runtime's stack-overflow handler, another copy of this library, an application's own),
//! called as it asked to be (`SA_SIGINFO` or not); if there was none (`SIG_DFL`, or `SIG_IGN`,
//! which cannot ignore a fault), the default action is restored and the signal raised again, so
//! the process dies of `SIGBUS` exactly as it would have without us.
//!
//! Only async-signal-safe calls are made in the handler: atomic loads and stores, `mmap`,
//! `sigaction` and `raise` (POSIX.1-2008 lists `sigaction` and `raise`; `mmap` is a plain
//! system call on Linux, and libwayland relies on it the same way). `errno` is saved and
//! restored around them.
//!
//! When this code lives in a shared object (the provider library, loaded with `dlopen` or
//! `dlmopen`), installing the handler also pins that object (`RTLD_NODELETE`): a `dlclose`
//! must never unmap code a signal handler points to.

use std::ffi::{c_int, c_void};
use std::io;
use std::sync::{Once, OnceLock};

/// What the handler asks about a `BUS_ADRERR` fault at an address: `true` if the fault was
/// repaired (the address is mapped again) and the faulting instruction may run again.
///
/// It runs inside a signal handler: only atomics and [`map_zeros`].
pub(crate) type FaultHook = fn(addr: usize) -> bool;

/// The hook, set once before the handler is installed.
static HOOK: OnceLock<FaultHook> = OnceLock::new();

/// The action that was installed before ours, to chain to.
#[derive(Clone, Copy)]
struct Previous {
    /// `sa_sigaction` (or `sa_handler`): a function, `SIG_DFL` or `SIG_IGN`.
    action: libc::sighandler_t,
    /// `sa_flags`: whether it takes `siginfo_t` (`SA_SIGINFO`).
    flags: c_int,
}

/// Set once, before ours is installed, and only read after.
static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Installs the handler, once per copy of this code in the process; later calls return the
/// first call's outcome.
///
/// # Errors
///
/// The `sigaction` error if the handler could not be installed.
pub(crate) fn install(hook: FaultHook) -> io::Result<()> {
    static ONCE: Once = Once::new();
    static FAILED: OnceLock<i32> = OnceLock::new();
    ONCE.call_once(|| {
        if let Err(e) = install_now(hook) {
            let _ = FAILED.set(e.raw_os_error().unwrap_or(libc::EINVAL));
        }
    });
    match FAILED.get() {
        Some(&errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Ok(()),
    }
}

fn install_now(hook: FaultHook) -> io::Result<()> {
    let _ = HOOK.set(hook);
    // SAFETY: an all-zero `sigaction` is a valid value of the C struct (no handler, empty
    // mask, no flags); the query below fills it in.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `act` is null (query only) and `old` is a valid, writable `sigaction`.
    if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = PREVIOUS.set(Previous {
        action: old.sa_sigaction,
        flags: old.sa_flags,
    });
    pin_this_object();
    // SAFETY: as above, all-zero is a valid `sigaction`; the fields that matter are set next.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
    // SA_ONSTACK: a thread that set up an alternate signal stack (Rust threads do, for stack
    // overflows) runs the handler there. No SA_NODEFER: a second SIGBUS inside the handler
    // would be a bug of ours, and stays blocked until it returns.
    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: `act.sa_mask` is a valid `sigset_t` to empty.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: `act` is a fully initialised `sigaction` whose handler has the `SA_SIGINFO`
    // signature; `oldact` is null. (A handler installed by another thread between the query
    // above and this call would be replaced without being chained to: installation happens
    // when the first block is opened, long after startup, where nobody else installs one.)
    if unsafe { libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the shared object this code is in (if any) impossible to unload: `dlopen` of itself
/// with `RTLD_NOLOAD | RTLD_NODELETE`. `dlopen` called from inside a `dlmopen` namespace acts on
/// that namespace, so each private copy pins itself. In an executable this finds nothing to
/// pin and does nothing.
fn pin_this_object() {
    // SAFETY: an all-zero `Dl_info` (null pointers) is a valid value to be filled in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: the address is that of a function of this object; `info` is writable.
    let found = unsafe { libc::dladdr(on_sigbus as *const () as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return;
    }
    // SAFETY: `dli_fname` is a NUL-terminated path owned by the dynamic loader, valid while the
    // object is loaded (it is: we are running its code). The handle is deliberately never
    // closed: it is the pin.
    let _handle = unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
}

/// Maps anonymous zero pages over `[addr, addr + len)` (a mapping's start and length), readable
/// and, if `writable`, writable. Async-signal-safe. `false` if `mmap` failed.
///
/// # Safety
///
/// `[addr, addr + len)` is a live mapping of this process that nothing else owns: its old
/// contents are gone afterwards, and whoever unmaps the old mapping later unmaps these pages.
pub(crate) unsafe fn map_zeros(addr: usize, len: usize, writable: bool) -> bool {
    let prot = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: MAP_FIXED replaces exactly the caller's mapping, which the caller guarantees is
    // live and its own; MAP_PRIVATE | MAP_ANONYMOUS pages are zero-filled and back no file.
    let at = unsafe {
        libc::mmap(
            addr as *mut c_void,
            len,
            prot,
            libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    at != libc::MAP_FAILED
}

/// The handler. Faults at addresses the hook claims are repaired; every other `SIGBUS` goes on
/// to the previous handler or to the default action.
extern "C" fn on_sigbus(sig: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: `__errno_location` returns this thread's errno, always valid.
    let errno = unsafe { *libc::__errno_location() };
    // Only faults the kernel raised for an access past the end of a file mapping: a SIGBUS
    // sent with kill or sigqueue (si_code <= 0) or a hardware error (BUS_MCEERR_*) is not ours.
    // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler (checked non-null
    // anyway); `si_addr` is the faulting address for a SIGBUS with BUS_ADRERR.
    let ours = !info.is_null()
        && unsafe { (*info).si_code } == libc::BUS_ADRERR
        && HOOK
            .get()
            .is_some_and(|hook| hook(unsafe { (*info).si_addr() } as usize));
    if !ours {
        // SAFETY: forwarding the arguments the kernel gave us, unchanged.
        unsafe { chain(sig, info, context) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Hands a fault that is not ours to the previous handler, or restores the default action
/// and raises the signal again.
///
/// # Safety
///
/// The arguments are those the kernel passed to [`on_sigbus`].
unsafe fn chain(sig: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let previous = PREVIOUS.get().copied();
    match previous {
        Some(p) if p.action != libc::SIG_DFL && p.action != libc::SIG_IGN => {
            if p.flags & libc::SA_SIGINFO != 0 {
                // SAFETY: with SA_SIGINFO, `sa_sigaction` is a handler with this signature,
                // installed by someone who expects to be called like this.
                let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(p.action) };
                handler(sig, info, context);
            } else {
                // SAFETY: without SA_SIGINFO, `sa_handler` takes the signal number only.
                let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(p.action) };
                handler(sig);
            }
        }
        _ => {
            // SAFETY: all-zero is a valid `sigaction`; SIG_DFL is 0, so this is the default
            // action with an empty mask.
            let default: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `default` is a valid `sigaction`; `sigaction` and `raise` are
            // async-signal-safe. SIGBUS is blocked while this handler runs, so the raised
            // signal is delivered, with the default action (death, core dump), as soon as the
            // handler returns.
            unsafe {
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
                libc::raise(libc::SIGBUS);
            }
        }
    }
}
