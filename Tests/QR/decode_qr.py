"""Decodes QR code PNGs with an independent decoder (zxing-cpp), for KeylightTrustTests.

Usage: decode_qr.py FILE.png ... — prints one JSON object per file:
{"file": ..., "ok": bool, "bytes_hex": ..., "version": ..., "ec_level": ...}
"""
import json
import sys

import zxingcpp
from PIL import Image


def main():
    for path in sys.argv[1:]:
        image = Image.open(path)
        image.load()
        results = zxingcpp.read_barcodes(image.convert("L"), formats=zxingcpp.BarcodeFormat.QRCode)
        if not results:
            print(json.dumps({"file": path, "ok": False}))
            continue
        result = results[0]
        raw = bytes(result.bytes)
        # zxing-cpp 3 reports the symbol's version and level in `extra` (a dict, or JSON text).
        extra = getattr(result, "extra", None) or {}
        if isinstance(extra, str):
            extra = json.loads(extra or "{}")
        print(json.dumps({
            "file": path, "ok": True, "bytes_hex": raw.hex(),
            "version": int(extra.get("Version") or 0), "ec_level": str(extra.get("ECLevel") or result.ec_level),
            "valid": bool(result.valid),
        }))


if __name__ == "__main__":
    main()
