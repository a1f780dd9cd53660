//! NVIDIA's NVML, loaded at run time (libnvidia-ml.so.1), so machines without an NVIDIA
//! driver are unaffected: every function here returns None there.

use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};

use libloading::{Library, Symbol};

type Device = *mut c_void;
const NVML_CLOCK_SM: c_uint = 1;
const NVML_TEMPERATURE_GPU: c_uint = 0;

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

pub struct Nvml {
    lib: Library,
    devices: Vec<Device>,
}

// SAFETY: NVML is thread-safe; device handles are plain identifiers.
unsafe impl Send for Nvml {}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GpuFacts {
    pub name: String,
    pub memory_total: u64,
    pub compute_capability: Option<String>,
    pub driver_version: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuReading {
    pub power_w: Option<f64>,
    /// Cumulative energy since the driver loaded, joules (Volta and newer).
    pub energy_j: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub temp_c: Option<f64>,
    pub memory_used: Option<u64>,
}

impl Nvml {
    /// Loads and initialises NVML; None where it is absent or fails.
    pub fn load() -> Option<Nvml> {
        // SAFETY: loading a system library; symbols are checked before use.
        let lib = unsafe { Library::new("libnvidia-ml.so.1") }.ok()?;
        unsafe {
            let init: Symbol<unsafe extern "C" fn() -> c_int> = lib.get(b"nvmlInit_v2\0").ok()?;
            if init() != 0 {
                return None;
            }
            let count_fn: Symbol<unsafe extern "C" fn(*mut c_uint) -> c_int> =
                lib.get(b"nvmlDeviceGetCount_v2\0").ok()?;
            let mut n: c_uint = 0;
            if count_fn(&mut n) != 0 {
                return None;
            }
            let by_index: Symbol<unsafe extern "C" fn(c_uint, *mut Device) -> c_int> =
                lib.get(b"nvmlDeviceGetHandleByIndex_v2\0").ok()?;
            let mut devices = Vec::new();
            for i in 0..n {
                let mut d: Device = std::ptr::null_mut();
                if by_index(i, &mut d) == 0 {
                    devices.push(d);
                }
            }
            Some(Nvml { lib, devices })
        }
    }

    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn string(&self, sym: &[u8], dev: Option<Device>) -> Option<String> {
        let mut buf = [0 as c_char; 96];
        unsafe {
            let rc = match dev {
                Some(d) => {
                    let f: Symbol<unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int> =
                        self.lib.get(sym).ok()?;
                    f(d, buf.as_mut_ptr(), buf.len() as c_uint)
                }
                None => {
                    let f: Symbol<unsafe extern "C" fn(*mut c_char, c_uint) -> c_int> =
                        self.lib.get(sym).ok()?;
                    f(buf.as_mut_ptr(), buf.len() as c_uint)
                }
            };
            (rc == 0).then(|| CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
        }
    }

    fn uint(&self, sym: &[u8], dev: Device, arg: Option<c_uint>) -> Option<c_uint> {
        let mut v: c_uint = 0;
        unsafe {
            let rc = match arg {
                Some(a) => {
                    let f: Symbol<unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int> =
                        self.lib.get(sym).ok()?;
                    f(dev, a, &mut v)
                }
                None => {
                    let f: Symbol<unsafe extern "C" fn(Device, *mut c_uint) -> c_int> =
                        self.lib.get(sym).ok()?;
                    f(dev, &mut v)
                }
            };
            (rc == 0).then_some(v)
        }
    }

    fn memory(&self, dev: Device) -> Option<Memory> {
        let mut m = Memory::default();
        unsafe {
            let f: Symbol<unsafe extern "C" fn(Device, *mut Memory) -> c_int> =
                self.lib.get(b"nvmlDeviceGetMemoryInfo\0").ok()?;
            (f(dev, &mut m) == 0).then_some(m)
        }
    }

    /// Names, memory, compute capability and driver of every GPU.
    pub fn facts(&self) -> Vec<GpuFacts> {
        let driver = self.string(b"nvmlSystemGetDriverVersion\0", None);
        self.devices
            .iter()
            .map(|&d| {
                let cc = unsafe {
                    let f: Option<
                        Symbol<unsafe extern "C" fn(Device, *mut c_int, *mut c_int) -> c_int>,
                    > = self.lib.get(b"nvmlDeviceGetCudaComputeCapability\0").ok();
                    let (mut major, mut minor) = (0, 0);
                    f.filter(|f| f(d, &mut major, &mut minor) == 0)
                        .map(|_| format!("{major}.{minor}"))
                };
                GpuFacts {
                    name: self
                        .string(b"nvmlDeviceGetName\0", Some(d))
                        .unwrap_or_default(),
                    memory_total: self.memory(d).map_or(0, |m| m.total),
                    compute_capability: cc,
                    driver_version: driver.clone(),
                }
            })
            .collect()
    }

    pub fn read(&self, i: usize) -> GpuReading {
        let Some(&d) = self.devices.get(i) else {
            return GpuReading::default();
        };
        let energy = unsafe {
            let f: Option<Symbol<unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int>> =
                self.lib.get(b"nvmlDeviceGetTotalEnergyConsumption\0").ok();
            let mut mj: c_ulonglong = 0;
            f.filter(|f| f(d, &mut mj) == 0).map(|_| mj as f64 / 1000.0)
        };
        GpuReading {
            power_w: self
                .uint(b"nvmlDeviceGetPowerUsage\0", d, None)
                .map(|mw| f64::from(mw) / 1000.0),
            energy_j: energy,
            sm_clock_mhz: self
                .uint(b"nvmlDeviceGetClockInfo\0", d, Some(NVML_CLOCK_SM))
                .map(f64::from),
            temp_c: self
                .uint(b"nvmlDeviceGetTemperature\0", d, Some(NVML_TEMPERATURE_GPU))
                .map(f64::from),
            memory_used: self.memory(d).map(|m| m.used),
        }
    }
}
