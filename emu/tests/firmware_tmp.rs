//! Opening the emulated PCI and USB GPUs leaves nothing in the temporary directory (the
//! synthetic firmware is written there for the AM driver to load, then removed). Its own test
//! binary: it points TMPDIR at a fresh directory for the whole process.

use runtime::DeviceOptions;

fn opts() -> DeviceOptions {
    DeviceOptions::default()
}

fn left_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn emulated_devices_leave_no_firmware_directory() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("firmware_tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    // Read by std::env::temp_dir, which is where the firmware goes.
    std::env::set_var("TMPDIR", &tmp);
    assert_eq!(std::env::temp_dir(), tmp);

    let (dev, usb) =
        emu::open_usb(runtime::usb::Firmware::Custom, opts(), |t| Box::new(t)).unwrap();
    // The bring-up did load firmware (the emulated PSP saw it), and none is left behind while
    // the device is open either.
    assert!(
        !usb.gpu.firmware_log().loaded.is_empty(),
        "no firmware was loaded"
    );
    assert_eq!(left_in(&tmp), Vec::<String>::new(), "after emu::open_usb");
    drop(dev);

    let (dev, _gpu) = emu::open_pci(emu::EmuArch::Gfx1100, opts()).unwrap();
    assert_eq!(left_in(&tmp), Vec::<String>::new(), "after emu::open_pci");
    drop(dev);
}
