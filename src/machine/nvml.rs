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
        let mut nvml = Nvml {
            lib,
            devices: Vec::new(),
        };
        let mut n: c_uint = 0;
        unsafe {
            type ByIndex = unsafe extern "C" fn(c_uint, *mut Device) -> c_int;
            if nvml.sym::<unsafe extern "C" fn() -> c_int>(b"nvmlInit_v2\0")?() != 0
                || nvml
                    .sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>(b"nvmlDeviceGetCount_v2\0")?(
                    &mut n,
                ) != 0
            {
                return None;
            }
            let by_index = nvml.sym::<ByIndex>(b"nvmlDeviceGetHandleByIndex_v2\0")?;
            nvml.devices = (0..n)
                .filter_map(|i| {
                    let mut d: Device = std::ptr::null_mut();
                    (by_index(i, &mut d) == 0).then_some(d)
                })
                .collect();
        }
        Some(nvml)
    }

    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// Safety: `F` must be the symbol's C type, as NVML's header declares it.
    unsafe fn sym<F>(&self, name: &[u8]) -> Option<Symbol<'_, F>> {
        unsafe { self.lib.get(name) }.ok()
    }

    fn string(&self, name: &[u8], dev: Option<Device>) -> Option<String> {
        type OfDevice = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int;
        type OfSystem = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
        let mut buf = [0 as c_char; 96];
        let (p, n) = (buf.as_mut_ptr(), buf.len() as c_uint);
        let rc = match dev {
            Some(d) => unsafe { self.sym::<OfDevice>(name)?(d, p, n) },
            None => unsafe { self.sym::<OfSystem>(name)?(p, n) },
        };
        (rc == 0).then(|| {
            unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
    }

    /// A device query that writes one value of type `T`, after `arg` when it takes one.
    fn value<T: Default>(&self, name: &[u8], dev: Device, arg: Option<c_uint>) -> Option<T> {
        let mut v = T::default();
        let rc = match arg {
            Some(a) => unsafe {
                self.sym::<unsafe extern "C" fn(Device, c_uint, *mut T) -> c_int>(name)?(
                    dev, a, &mut v,
                )
            },
            None => unsafe {
                self.sym::<unsafe extern "C" fn(Device, *mut T) -> c_int>(name)?(dev, &mut v)
            },
        };
        (rc == 0).then_some(v)
    }

    /// Names, memory, compute capability and driver of every GPU.
    pub fn facts(&self) -> Vec<GpuFacts> {
        type Capability = unsafe extern "C" fn(Device, *mut c_int, *mut c_int) -> c_int;
        let driver = self.string(b"nvmlSystemGetDriverVersion\0", None);
        (self.devices.iter())
            .map(|&d| {
                let (mut major, mut minor) = (0, 0);
                let cc = unsafe { self.sym::<Capability>(b"nvmlDeviceGetCudaComputeCapability\0") };
                let cc = cc.filter(|f| unsafe { f(d, &mut major, &mut minor) } == 0);
                GpuFacts {
                    name: self
                        .string(b"nvmlDeviceGetName\0", Some(d))
                        .unwrap_or_default(),
                    memory_total: self.memory(d).map_or(0, |m| m.total),
                    compute_capability: cc.map(|_| format!("{major}.{minor}")),
                    driver_version: driver.clone(),
                }
            })
            .collect()
    }

    fn memory(&self, dev: Device) -> Option<Memory> {
        self.value(b"nvmlDeviceGetMemoryInfo\0", dev, None)
    }

    pub fn read(&self, i: usize) -> GpuReading {
        let Some(&d) = self.devices.get(i) else {
            return GpuReading::default();
        };
        let uint = |name: &[u8], arg| self.value::<c_uint>(name, d, arg).map(f64::from);
        let energy = self.value::<c_ulonglong>(b"nvmlDeviceGetTotalEnergyConsumption\0", d, None);
        GpuReading {
            power_w: uint(b"nvmlDeviceGetPowerUsage\0", None).map(|mw| mw / 1000.0),
            energy_j: energy.map(|mj| mj as f64 / 1000.0),
            sm_clock_mhz: uint(b"nvmlDeviceGetClockInfo\0", Some(NVML_CLOCK_SM)),
            temp_c: uint(b"nvmlDeviceGetTemperature\0", Some(NVML_TEMPERATURE_GPU)),
            memory_used: self.memory(d).map(|m| m.used),
        }
    }
}
