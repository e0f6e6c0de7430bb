//! A minimal zip container reader/writer for `.npz` archives: stored and deflated
//! (`np.savez_compressed`) members, CRC-32 checked, zip64 sizes understood. Every size read from the file is
//! checked against the bytes available before anything is allocated.

use crate::error::{GraphError, GraphResult};

const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// CRC-32 (IEEE), as zip stores it.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// A bounds-checked little-endian cursor over a byte slice.
struct Le<'a> {
    b: &'a [u8],
}

impl<'a> Le<'a> {
    fn get(&self, at: usize, n: usize) -> Option<&'a [u8]> {
        self.b.get(at..at.checked_add(n)?)
    }
    fn u16(&self, at: usize) -> Option<u64> {
        self.get(at, 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]) as u64)
    }
    fn u32(&self, at: usize) -> Option<u64> {
        self.get(at, 4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")) as u64)
    }
    fn u64(&self, at: usize) -> Option<u64> {
        self.get(at, 8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
}

/// One member of an archive (borrowed if stored, owned if inflated).
#[derive(Debug)]
pub(crate) struct Member<'a> {
    pub(crate) name: String,
    pub(crate) data: std::borrow::Cow<'a, [u8]>,
}

/// Deflate never expands data more than about 1032 : 1; a larger declared size is a
/// corrupt header, refused before inflating.
const MAX_DEFLATE_RATIO: u64 = 1032;

fn bad(file: &str, member: Option<&str>, what: impl Into<String>) -> GraphError {
    GraphError::Malformed {
        file: file.into(),
        member: member.map(Into::into),
        what: what.into(),
    }
}

fn usize_of(v: u64, file: &str, what: &str) -> GraphResult<usize> {
    usize::try_from(v).map_err(|_| bad(file, None, format!("{what} {v} does not fit in memory")))
}

/// The members of a zip archive held in `bytes`. Compression methods other than
/// stored and deflate are unsupported (`SHADE-E0332`); everything else wrong is
/// `SHADE-E0331`.
pub(crate) fn read_members<'a>(bytes: &'a [u8], file: &str) -> GraphResult<Vec<Member<'a>>> {
    let z = Le { b: bytes };
    let trunc = |what: &str| {
        bad(
            file,
            None,
            format!("truncated or not a zip archive ({what})"),
        )
    };
    // End of central directory: the last `PK\5\6` within the final 64 KiB + 22 bytes.
    if bytes.len() < 22 {
        return Err(trunc("shorter than an end-of-directory record"));
    }
    let lo = bytes.len().saturating_sub(22 + 0xFFFF);
    let eocd = (lo..=bytes.len() - 22)
        .rev()
        .find(|&i| bytes[i..i + 4] == [0x50, 0x4B, 0x05, 0x06])
        .ok_or_else(|| trunc("no end-of-directory record"))?;
    let mut entries = z.u16(eocd + 10).ok_or_else(|| trunc("eocd"))?;
    let mut cd_size = z.u32(eocd + 12).ok_or_else(|| trunc("eocd"))?;
    let mut cd_off = z.u32(eocd + 16).ok_or_else(|| trunc("eocd"))?;
    if entries == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_off == 0xFFFF_FFFF {
        // zip64: the locator sits just before the end record.
        let loc = eocd.checked_sub(20).ok_or_else(|| trunc("zip64 locator"))?;
        if z.u32(loc) != Some(0x0706_4B50) {
            return Err(trunc("zip64 locator"));
        }
        let rec = usize_of(
            z.u64(loc + 8).ok_or_else(|| trunc("zip64 locator"))?,
            file,
            "offset",
        )?;
        if z.u32(rec) != Some(0x0606_4B50) {
            return Err(trunc("zip64 end record"));
        }
        entries = z.u64(rec + 32).ok_or_else(|| trunc("zip64 end record"))?;
        cd_size = z.u64(rec + 40).ok_or_else(|| trunc("zip64 end record"))?;
        cd_off = z.u64(rec + 48).ok_or_else(|| trunc("zip64 end record"))?;
    }
    let cd_off = usize_of(cd_off, file, "directory offset")?;
    let cd_size = usize_of(cd_size, file, "directory size")?;
    if z.get(cd_off, cd_size).is_none() {
        return Err(trunc("central directory beyond the end"));
    }
    // Each directory entry takes at least 46 bytes: bound the count before allocating.
    if entries > (cd_size / 46) as u64 {
        return Err(bad(
            file,
            None,
            format!("{entries} entries cannot fit a {cd_size}-byte directory"),
        ));
    }
    let mut out = Vec::with_capacity(entries as usize);
    let mut p = cd_off;
    for _ in 0..entries {
        if z.u32(p) != Some(0x0201_4B50) {
            return Err(trunc("central directory entry"));
        }
        let field = |at: usize| {
            z.u32(p + at)
                .ok_or_else(|| trunc("central directory entry"))
        };
        let short = |at: usize| {
            z.u16(p + at)
                .ok_or_else(|| trunc("central directory entry"))
        };
        let method = short(10)?;
        let crc = field(16)? as u32;
        let mut csize = field(20)?;
        let mut usize_ = field(24)?;
        let (nlen, xlen, clen) = (
            short(28)? as usize,
            short(30)? as usize,
            short(32)? as usize,
        );
        let mut local = field(42)?;
        let name_bytes = z.get(p + 46, nlen).ok_or_else(|| trunc("member name"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        // zip64 extra field: the 0xFFFFFFFF sizes/offset follow in this order.
        let extra = z
            .get(p + 46 + nlen, xlen)
            .ok_or_else(|| trunc("extra field"))?;
        let mut q = 0;
        while q + 4 <= extra.len() {
            let x = Le { b: extra };
            let (id, len) = (x.u16(q).unwrap_or(0), x.u16(q + 2).unwrap_or(0) as usize);
            if id == 1 {
                let mut r = q + 4;
                for v in [&mut usize_, &mut csize, &mut local] {
                    if *v == 0xFFFF_FFFF {
                        *v = x.u64(r).ok_or_else(|| trunc("zip64 extra"))?;
                        r += 8;
                    }
                }
            }
            q += 4 + len;
        }
        let m = Some(name.as_str());
        if method != 0 && method != 8 {
            return Err(GraphError::Unsupported {
                file: file.into(),
                member: Some(name),
                what: format!("zip compression method {method}"),
            });
        }
        if method == 0 && csize != usize_ {
            return Err(bad(
                file,
                m,
                format!("stored member has size {csize} but {usize_} uncompressed"),
            ));
        }
        if method == 8 && usize_ > csize.saturating_mul(MAX_DEFLATE_RATIO).saturating_add(1024) {
            return Err(bad(
                file,
                m,
                format!("{csize} deflated bytes cannot inflate to the declared {usize_}"),
            ));
        }
        let local = usize_of(local, file, "member offset")?;
        if z.u32(local) != Some(0x0403_4B50) {
            return Err(bad(file, m, "no local header at the recorded offset"));
        }
        let ln = z.u16(local + 26).ok_or_else(|| trunc("local header"))? as usize;
        let lx = z.u16(local + 28).ok_or_else(|| trunc("local header"))? as usize;
        let start = local + 30 + ln + lx;
        let len = usize_of(csize, file, "member size")?;
        let data = z.get(start, len).ok_or_else(|| {
            bad(
                file,
                m,
                format!(
                    "member of {len} bytes at offset {start} runs past the end ({} bytes)",
                    bytes.len()
                ),
            )
        })?;
        let data = if method == 8 {
            let expect = usize_of(usize_, file, "member size")?;
            let v = miniz_oxide::inflate::decompress_to_vec_with_limit(data, expect)
                .map_err(|e| bad(file, m, format!("corrupt deflate stream ({:?})", e.status)))?;
            if v.len() != expect {
                return Err(bad(
                    file,
                    m,
                    format!("inflates to {} bytes, not the declared {expect}", v.len()),
                ));
            }
            std::borrow::Cow::Owned(v)
        } else {
            std::borrow::Cow::Borrowed(data)
        };
        let found = crc32(&data);
        if found != crc {
            return Err(bad(
                file,
                m,
                format!("CRC-32 {found:08x} differs from the recorded {crc:08x}"),
            ));
        }
        out.push(Member { name, data });
        p += 46 + nlen + xlen + clen;
    }
    Ok(out)
}

/// [`write_members_with`] without compression.
#[cfg(test)]
pub(crate) fn write_members(members: &[(String, Vec<u8>)]) -> GraphResult<Vec<u8>> {
    write_members_with(members, false)
}

/// A zip archive of the members, stored (as `np.savez`) or deflated if `deflate` (as
/// `np.savez_compressed`). Archives beyond 4 GiB (zip64) are not written
/// (`SHADE-E0305`).
pub(crate) fn write_members_with(
    members: &[(String, Vec<u8>)],
    deflate: bool,
) -> GraphResult<Vec<u8>> {
    let total: usize = members
        .iter()
        .map(|(n, d)| 2 * (n.len() + 46) + d.len())
        .sum::<usize>()
        + 22;
    if total > u32::MAX as usize || members.len() > 0xFFFF {
        return Err(GraphError::TooLarge {
            what: "archive size in bytes".into(),
            found: total as u64,
            max: u32::MAX as u64,
        });
    }
    let mut out = Vec::new();
    let mut central = Vec::new();
    let put16 = |v: &mut Vec<u8>, x: u16| v.extend_from_slice(&x.to_le_bytes());
    let put32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    for (name, raw) in members {
        let offset = out.len() as u32;
        let crc = crc32(raw);
        let packed;
        let data = if deflate {
            packed = miniz_oxide::deflate::compress_to_vec(raw, 6);
            &packed
        } else {
            raw
        };
        let header = |v: &mut Vec<u8>, central: bool| {
            put32(v, if central { 0x0201_4B50 } else { 0x0403_4B50 });
            if central {
                put16(v, 20); // made by
            }
            put16(v, 20); // version needed
            put16(v, 0); // flags
            put16(v, if deflate { 8 } else { 0 }); // method
            put16(v, 0); // time
            put16(v, 0x21); // date: 1980-01-01
            put32(v, crc);
            put32(v, data.len() as u32);
            put32(v, raw.len() as u32);
            put16(v, name.len() as u16);
            put16(v, 0); // extra
            if central {
                put16(v, 0); // comment
                put16(v, 0); // disk
                put16(v, 0); // internal attributes
                put32(v, 0); // external attributes
                put32(v, offset);
            }
            v.extend_from_slice(name.as_bytes());
        };
        header(&mut out, false);
        out.extend_from_slice(data);
        header(&mut central, true);
    }
    let cd_off = out.len() as u32;
    out.extend_from_slice(&central);
    put32(&mut out, 0x0605_4B50);
    put16(&mut out, 0);
    put16(&mut out, 0);
    put16(&mut out, members.len() as u16);
    put16(&mut out, members.len() as u16);
    put32(&mut out, central.len() as u32);
    put32(&mut out, cd_off);
    put16(&mut out, 0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_check_string() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trip() {
        let ms = vec![
            ("a.npy".to_string(), b"hello".to_vec()),
            ("b".to_string(), vec![]),
        ];
        let z = write_members(&ms).unwrap();
        let back = read_members(&z, "x").unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0].name.as_str(), &back[0].data[..]),
            ("a.npy", &b"hello"[..])
        );
        assert_eq!(&back[1].data[..], b"");
        let big = vec![("z".to_string(), vec![7u8; 10_000])];
        let z = write_members_with(&big, true).unwrap();
        assert!(z.len() < 500);
        assert_eq!(&read_members(&z, "x").unwrap()[0].data[..], &big[0].1[..]);
        // A corrupt deflate stream is a coded error.
        let mut bad = z.clone();
        bad[40] ^= 0xFF;
        bad[41] ^= 0xFF;
        assert_eq!(read_members(&bad, "x").unwrap_err().code(), "SHADE-E0331");
    }
}
