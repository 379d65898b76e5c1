//! The data of a Curator `DistributedQueue` node (Curator's `ItemSerializer`): the big-endian
//! int `0x00010001`, then per item the byte `0x01`, its length as a big-endian int and its
//! bytes, then the byte `0x02`. One node holds one `put` or all the items of a `putMulti`.

use crate::Error;

/// The envelope's version word (`ItemSerializer.VERSION`).
const VERSION: u32 = 0x0001_0001;
/// The opcode before each item (`ItemSerializer.ITEM_OPCODE`).
const ITEM: u8 = 0x01;
/// The opcode after the last item (`ItemSerializer.EOF_OPCODE`).
const END: u8 = 0x02;
/// The bytes an item adds besides its own: the opcode and the length.
const ITEM_OVERHEAD_BYTES: usize = 5;

/// The envelope of `items`, in order.
///
/// # Errors
/// [`Error::BadArguments`] for an item longer than a Java int can say (2^31 - 1 bytes).
pub(crate) fn encode<I>(items: I) -> Result<Vec<u8>, Error>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut out = VERSION.to_be_bytes().to_vec();
    for item in items {
        let item = item.as_ref();
        let len = i32::try_from(item.len()).map_err(|_| {
            Error::BadArguments(format!("a queue item of {} bytes is too long", item.len()))
        })?;
        out.reserve(ITEM_OVERHEAD_BYTES + item.len());
        out.push(ITEM);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(item);
    }
    out.push(END);
    Ok(out)
}

/// The items of an envelope, or why `data` is not one. Bytes after the end opcode are
/// ignored, as Curator ignores them; claimed lengths are checked against the bytes left
/// before anything is allocated.
pub(crate) fn decode(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    Ok(items(data)?.into_iter().map(<[u8]>::to_vec).collect())
}

/// True if `data` is an envelope (a take checks before it deletes, and decodes after; the
/// check copies no item).
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    items(data).map(drop)
}

/// The items of an envelope, as slices of `data`.
fn items(data: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut rest = data;
    let version = take_int(&mut rest).ok_or("shorter than the envelope's version word")?;
    if version != VERSION {
        return Err(format!("version word {version:#010x}, expected {VERSION:#010x}"));
    }
    let mut items = Vec::new();
    loop {
        let (&opcode, after) = rest
            .split_first()
            .ok_or_else(|| format!("ends after {} items without the end byte", items.len()))?;
        rest = after;
        match opcode {
            END => return Ok(items),
            ITEM => {}
            other => return Err(format!("opcode {other:#04x} at item {}", items.len())),
        }
        let len = take_int(&mut rest)
            .ok_or_else(|| format!("item {} ends inside its length", items.len()))?;
        let len = usize::try_from(i32::from_be_bytes(len.to_be_bytes()))
            .map_err(|_| format!("item {} has a negative length", items.len()))?;
        if len > rest.len() {
            return Err(format!("item {} claims {len} bytes, {} left", items.len(), rest.len()));
        }
        let (item, after) = rest.split_at(len);
        items.push(item);
        rest = after;
    }
}

/// Reads a big-endian 4-byte word off the front of `rest`.
fn take_int(rest: &mut &[u8]) -> Option<u32> {
    let (word, after) = rest.split_first_chunk::<4>()?;
    *rest = after;
    Some(u32::from_be_bytes(*word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curators_bytes() {
        // ItemSerializer.serialize of "ab" then "" (a putMulti of two).
        let bytes = [0, 1, 0, 1, 1, 0, 0, 0, 2, b'a', b'b', 1, 0, 0, 0, 0, 2];
        assert_eq!(encode([&b"ab"[..], b""]).unwrap(), bytes);
        assert_eq!(decode(&bytes).unwrap(), [b"ab".to_vec(), Vec::new()]);
        assert_eq!(decode(&[0, 1, 0, 1, 2]).unwrap(), Vec::<Vec<u8>>::new());
        // Trailing bytes are ignored, as Curator's DataInputStream leaves them unread.
        assert_eq!(decode(&[0, 1, 0, 1, 2, 9, 9]).unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn refuses_what_curator_cannot_read() {
        for bad in [
            &b""[..],
            b"raw bytes",
            &[0, 1, 0],
            &[0, 1, 0, 2, 2],
            &[0, 1, 0, 1],
            &[0, 1, 0, 1, 3],
            &[0, 1, 0, 1, 1, 0, 0],
            &[0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2],
            &[0, 1, 0, 1, 1, 0x7f, 0xff, 0xff, 0xff, 2],
            &[0, 1, 0, 1, 1, 0, 0, 0, 1, b'a'],
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
