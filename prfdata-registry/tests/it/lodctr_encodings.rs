//! lodctr reads the counter .INI (and its symbol file) in the encodings Windows' lodctr files
//! come in: UTF-16LE with a byte order mark (the usual "Unicode" .INI), UTF-16BE with one, and
//! UTF-8 with one; the lodctr design specification's own example, converted, loads exactly as the
//! plain file does, and errors still name the file and the line.

use std::path::Path;

use prfdata_registry::{lodctr, FileRegistry, LodctrError, LodctrOptions, Registry};

use crate::lodctr_spec::{DEVDEF_H, DEVICE_INI};

/// The encodings, each as its byte order mark and the bytes of a text.
#[derive(Clone, Copy, Debug)]
enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
}

impl Encoding {
    const ALL: [Encoding; 4] = [Self::Utf8, Self::Utf8Bom, Self::Utf16Le, Self::Utf16Be];

    /// `text` with Windows line ends, encoded.
    fn encode(self, text: &str) -> Vec<u8> {
        let text = text.replace('\n', "\r\n");
        match self {
            Self::Utf8 => text.into_bytes(),
            Self::Utf8Bom => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
            Self::Utf16Le => [0xFF, 0xFE]
                .into_iter()
                .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
                .collect(),
            Self::Utf16Be => [0xFE, 0xFF]
                .into_iter()
                .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
                .collect(),
        }
    }
}

/// Writes the .INI and .h in `ini_enc` / `h_enc` into `dir`, runs lodctr into a new registry
/// there, and returns the outcome with the registry.
fn load(
    dir: &Path,
    ini: &str,
    ini_enc: Encoding,
    h_enc: Encoding,
) -> (Result<(), LodctrError>, FileRegistry) {
    std::fs::write(dir.join("devdef.h"), h_enc.encode(DEVDEF_H)).unwrap();
    std::fs::write(dir.join("device.ini"), ini_enc.encode(ini)).unwrap();
    let reg = FileRegistry::open(dir.join("registry")).unwrap();
    let result = lodctr(&reg, dir.join("device.ini"), &LodctrOptions::default()).map(|_| ());
    (result, reg)
}

#[test]
fn the_lodctr_spec_example_loads_the_same_in_every_encoding() {
    let plain = tempfile::tempdir().unwrap();
    let (result, reg) = load(plain.path(), DEVICE_INI, Encoding::Utf8, Encoding::Utf8);
    result.unwrap();
    let expected = reg.snapshot().unwrap();
    for ini_enc in Encoding::ALL {
        for h_enc in Encoding::ALL {
            let dir = tempfile::tempdir().unwrap();
            let (result, reg) = load(dir.path(), DEVICE_INI, ini_enc, h_enc);
            if let Err(e) = result {
                panic!(".INI {ini_enc:?}, .h {h_enc:?}: {e}");
            }
            assert_eq!(
                reg.snapshot().unwrap(),
                expected,
                ".INI {ini_enc:?}, .h {h_enc:?}"
            );
        }
    }
}

#[test]
fn non_ascii_text_survives_utf16() {
    let ini = DEVICE_INI.replace("Device Name in other language", "Nom du périphérique ✓ 𝔇");
    let dir = tempfile::tempdir().unwrap();
    let (result, reg) = load(dir.path(), &ini, Encoding::Utf16Le, Encoding::Utf8);
    result.unwrap();
    let text = prfdata_registry::perflib::counter_text(&reg.snapshot().unwrap(), "00C").unwrap();
    assert!(
        text.counter
            .values()
            .any(|n| n == "Nom du périphérique ✓ 𝔇"),
        "{:?}",
        text.counter
    );
}

#[test]
fn errors_in_a_utf16_file_name_the_file_and_line() {
    for enc in [Encoding::Utf16Le, Encoding::Utf16Be, Encoding::Utf8Bom] {
        let dir = tempfile::tempdir().unwrap();
        // Line 16 names a symbol the .h does not define.
        let ini = DEVICE_INI.replace("DEVICE_COUNTER_1_009_NAME", "NO_SUCH_SYMBOL_009_NAME");
        let (result, _) = load(dir.path(), &ini, enc, Encoding::Utf8);
        let err = result.unwrap_err();
        assert!(
            matches!(err, LodctrError::UnknownSymbol { line: 16, .. }),
            "{enc:?}: {err:?}"
        );
        assert!(err.to_string().contains("device.ini:16"), "{enc:?}: {err}");
    }
}

#[test]
fn a_cut_or_broken_utf16_file_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Encoding::Utf16Le.encode(DEVICE_INI);
    bytes.pop(); // half a code unit at the end of line 26, the last
    std::fs::write(dir.path().join("devdef.h"), DEVDEF_H).unwrap();
    std::fs::write(dir.path().join("device.ini"), &bytes).unwrap();
    let reg = FileRegistry::open(dir.path().join("registry")).unwrap();
    let before = reg.snapshot().unwrap();
    let err = lodctr(
        &reg,
        dir.path().join("device.ini"),
        &LodctrOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, LodctrError::BadEncoding { line: 26, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("device.ini:26"), "{err}");

    // A lone high surrogate on line 3 (in `drivername=`).
    let text = DEVICE_INI.replace('\n', "\r\n");
    let mut units: Vec<u16> = text.encode_utf16().collect();
    let at = text.find("DriverName").unwrap();
    units[text[..at].encode_utf16().count()] = 0xD800;
    let bytes: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(units.into_iter().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::write(dir.path().join("device.ini"), bytes).unwrap();
    let err = lodctr(
        &reg,
        dir.path().join("device.ini"),
        &LodctrOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, LodctrError::BadEncoding { line: 3, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("surrogate"), "{err}");
    assert_eq!(reg.snapshot().unwrap(), before, "nothing is written");
}
