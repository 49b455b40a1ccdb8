//! Library loading, NVRTC compilation to CUBIN, and the on-disk module cache.

use crate::error::{Error, Result};
use cudarc::nvrtc::sys as nv;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Directories searched for libnvrtc when it is not on the loader's path.
fn nvrtc_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(var) {
            v.push(PathBuf::from(h).join("lib64"));
        }
    }
    v.push(PathBuf::from("/usr/local/cuda/lib64"));
    v.push(PathBuf::from("/usr/lib/x86_64-linux-gnu"));
    v
}

const NVRTC_NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

static PRELOADED: OnceLock<Vec<libloading::Library>> = OnceLock::new();

/// Loads NVRTC from `$PWPA_NVRTC` (a full path) or the usual toolkit directories before
/// cudarc looks for it by name (a library already loaded is found by its soname).
fn preload_nvrtc() {
    PRELOADED.get_or_init(|| {
        let mut libs = Vec::new();
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("PWPA_NVRTC") {
            candidates.push(PathBuf::from(p));
        }
        for d in nvrtc_dirs() {
            for n in NVRTC_NAMES {
                candidates.push(d.join(n));
            }
        }
        for c in candidates {
            if c.is_file() {
                // SAFETY: loading NVRTC runs its initialisers only; it stays loaded for the process.
                if let Ok(l) = unsafe { libloading::Library::new(&c) } {
                    libs.push(l);
                    break;
                }
            }
        }
        libs
    });
}

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    preload_nvrtc();
    // SAFETY: only tries to dlopen candidate names.
    unsafe { nv::is_culib_present() }
}

/// Checks that NVRTC is present, with the error that lists where it looked.
pub fn require_nvrtc() -> Result<()> {
    if nvrtc_present() {
        return Ok(());
    }
    let mut looked: Vec<String> = Vec::new();
    if let Some(p) = std::env::var_os("PWPA_NVRTC") {
        looked.push(format!("$PWPA_NVRTC={}", PathBuf::from(p).display()));
    }
    looked.push(format!(
        "LD_LIBRARY_PATH={}",
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    ));
    for d in nvrtc_dirs() {
        looked.push(d.display().to_string());
    }
    Err(Error::NoNvrtc(looked.join(", ")))
}

/// NVRTC's version (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    require_nvrtc()?;
    let (mut a, mut b) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); out-pointers are valid.
    let r = unsafe { nv::nvrtcVersion(&mut a, &mut b) };
    nv_check(r, "nvrtcVersion")?;
    Ok((a, b))
}

fn nv_check(r: nv::nvrtcResult, what: &'static str) -> Result<()> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Nvrtc {
            what,
            code: format!("{r:?}"),
        })
    }
}

struct Prog(nv::nvrtcProgram);
impl Drop for Prog {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe {
            nv::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

/// Output of a compilation.
pub struct Compiled {
    /// CUBIN (when a real architecture was given) else PTX bytes (NUL-terminated).
    pub image: Vec<u8>,
    /// The compile log (warnings, register reports with `-Xptxas -v` style options).
    pub log: String,
}

/// Compiles `src` with `options`; `want_cubin` asks for CUBIN (a `sm_XX` architecture), else PTX.
pub fn compile(name: &str, src: &str, options: &[String], want_cubin: bool) -> Result<Compiled> {
    require_nvrtc()?;
    let csrc = CString::new(src).map_err(|_| Error::Nvrtc {
        what: "source with a NUL byte",
        code: String::new(),
    })?;
    let cname = CString::new(name).unwrap_or_default();
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings; no headers.
    let r = unsafe {
        nv::nvrtcCreateProgram(
            &mut prog,
            csrc.as_ptr(),
            cname.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    nv_check(r, "nvrtcCreateProgram")?;
    let prog = Prog(prog);
    let copts: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).unwrap_or_default())
        .collect();
    let ptrs: Vec<*const std::ffi::c_char> = copts.iter().map(|c| c.as_ptr()).collect();
    // SAFETY: the program is valid; option pointers live through the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog.0, ptrs.len() as i32, ptrs.as_ptr()) };
    let log = program_log(&prog);
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::Compile {
            name: name.to_string(),
            options: options.to_vec(),
            log: format!("{r:?}\n{log}"),
        });
    }
    let mut size = 0usize;
    let image = if want_cubin {
        // SAFETY: valid program; buffer sized by the size query.
        nv_check(
            unsafe { nv::nvrtcGetCUBINSize(prog.0, &mut size) },
            "nvrtcGetCUBINSize",
        )?;
        let mut buf = vec![0u8; size];
        nv_check(
            unsafe { nv::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut std::ffi::c_char) },
            "nvrtcGetCUBIN",
        )?;
        buf
    } else {
        nv_check(
            unsafe { nv::nvrtcGetPTXSize(prog.0, &mut size) },
            "nvrtcGetPTXSize",
        )?;
        let mut buf = vec![0u8; size];
        nv_check(
            unsafe { nv::nvrtcGetPTX(prog.0, buf.as_mut_ptr() as *mut std::ffi::c_char) },
            "nvrtcGetPTX",
        )?;
        buf
    };
    Ok(Compiled { image, log })
}

fn program_log(prog: &Prog) -> String {
    let mut size = 0usize;
    // SAFETY: valid program; buffer sized by the size query.
    unsafe {
        if nv::nvrtcGetProgramLogSize(prog.0, &mut size) != nv::nvrtcResult::NVRTC_SUCCESS
            || size == 0
        {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        if nv::nvrtcGetProgramLog(prog.0, buf.as_mut_ptr() as *mut std::ffi::c_char)
            != nv::nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        CStr::from_bytes_until_nul(&buf)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// 128-bit FNV-1a style key (two 64-bit lanes with different offsets), hex.
pub fn hash_key(parts: &[&[u8]]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    for p in parts {
        for &byte in p.iter().chain(&[0xFFu8]) {
            a ^= byte as u64;
            a = a.wrapping_mul(0x0000_0100_0000_01b3);
            b ^= byte as u64;
            b = b.wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5);
        }
    }
    format!("{a:016x}{b:016x}")
}

/// The cache directory: `$PWPA_CACHE_DIR`, else `$XDG_CACHE_HOME/pwpa`, else `~/.cache/pwpa`
/// (`None` when none of these can be formed).
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("PWPA_CACHE_DIR") {
        if !d.is_empty() {
            return Some(PathBuf::from(d));
        }
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        if !d.is_empty() {
            return Some(PathBuf::from(d).join("pwpa"));
        }
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("pwpa"))
}

/// Reads a cached module image.
pub fn cache_read(key: &str) -> Option<Vec<u8>> {
    let p = cache_dir()?.join("cuda").join(format!("{key}.bin"));
    let v = std::fs::read(p).ok()?;
    if v.is_empty() {
        None
    } else {
        Some(v)
    }
}

/// Writes a module image atomically (temp file in the same directory, then rename);
/// failures are ignored: the cache is an optimisation.
pub fn cache_write(key: &str, image: &[u8]) {
    let Some(dir) = cache_dir() else { return };
    let dir = dir.join("cuda");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let _ = write_atomic(&dir, &format!("{key}.bin"), image);
}

fn write_atomic(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{name}.{}.{nonce}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    let r = f.write_all(data).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
