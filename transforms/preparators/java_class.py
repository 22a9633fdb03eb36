"""Compiled Java classes (``.class``): the class's package and name, its superclass and interfaces, its
fields and methods with their types and declared exceptions, written as a Java declaration outline (Tika's
class parser writes the same), constant fields with their values (``static final String TYPE = "list"``: a
searcher finds the class by a message, a MIME type or a number it defines), and the source file it was
compiled from. Read from the class file's constant pool and member tables (JVM specification, chapter 4)
with the standard library; the code itself is not decompiled.
"""

from __future__ import annotations

import json
import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

REVISION = 1  # part of the preparation fingerprint (base.py): 1 writes constant fields' values
MAGIC = b"\xca\xfe\xba\xbe"
MIME_TYPES = ("application/x-java-applet", "application/java-vm", "application/x-java-vm",
              "application/x-java-class")
# constant pool tags → size of their payload (Utf8's is its own length); Long and Double take two slots
_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
_PRIMITIVES = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long", "S": "short",
               "Z": "boolean", "V": "void"}
_ACCESS = ((0x0001, "public"), (0x0002, "private"), (0x0004, "protected"), (0x0008, "static"),
           (0x0010, "final"), (0x0400, "abstract"))
_SYNCHRONIZED = 0x0020  # on a method (on a class the same bit is ACC_SUPER, which says nothing)


def _modifiers(flags: int) -> str:
    return " ".join(word for bit, word in _ACCESS if flags & bit)


def _types(descriptor: str) -> list[str]:
    """Java type names of a descriptor's types, in order (``[Ljava/lang/String;I`` → String[], int)."""
    names, at = [], 0
    while at < len(descriptor):
        dims = 0
        while descriptor[at] == "[":
            dims, at = dims + 1, at + 1
        if descriptor[at] == "L":
            end = descriptor.index(";", at)
            name, at = descriptor[at + 1:end].replace("/", "."), end + 1
        else:
            name, at = _PRIMITIVES.get(descriptor[at], descriptor[at]), at + 1
        names.append(name + "[]" * dims)
    return names


class _ClassFile:
    def __init__(self, data: bytes):
        self.data, self.at = data, 8
        self.pool: dict[int, tuple[int, object]] = {}
        count, index = self.u2(), 1
        while index < count:
            tag = self.data[self.at]
            self.at += 1
            if tag == 1:
                length = self.u2()
                self.pool[index] = (1, data[self.at:self.at + length].decode("utf-8", "replace"))  # modified UTF-8
                self.at += length
            elif tag in _SIZES:
                self.pool[index] = (tag, data[self.at:self.at + _SIZES[tag]])
                self.at += _SIZES[tag]
            else:
                raise PreparationError(f"not a Java class file: constant pool tag {tag} at byte {self.at - 1}")
            index += 2 if tag in (5, 6) else 1

    def u2(self) -> int:
        value = struct.unpack_from(">H", self.data, self.at)[0]
        self.at += 2
        return value

    def utf8(self, index: int) -> str:
        tag, value = self.pool.get(index, (0, ""))
        return value if tag == 1 else ""

    def class_name(self, index: int) -> str:
        tag, value = self.pool.get(index, (0, b"\0\0"))
        return self.utf8(struct.unpack(">H", value)[0]).replace("/", ".") if tag == 7 else ""

    def members(self) -> list[tuple[int, str, str, list[tuple[str, bytes]]]]:
        out = []
        for _ in range(self.u2()):
            flags, name, descriptor = self.u2(), self.utf8(self.u2()), self.utf8(self.u2())
            out.append((flags, name, descriptor, self.attributes()))
        return out

    def attributes(self) -> list[tuple[str, bytes]]:
        out = []
        for _ in range(self.u2()):
            name = self.utf8(self.u2())
            length = struct.unpack_from(">I", self.data, self.at)[0]
            out.append((name, self.data[self.at + 4:self.at + 4 + length]))
            self.at += 4 + length
        return out


def _float32(raw: bytes) -> str:
    """The shortest decimal that is this float (0.1, not 0.10000000149011612)."""
    value = struct.unpack(">f", raw)[0]
    return next((text for digits in range(1, 10) if struct.pack(">f", float(text := f"{value:.{digits}g}")) == raw),
                repr(value))


def _constant(klass: _ClassFile, descriptor: str, attributes: list[tuple[str, bytes]]) -> str:
    """`` = value`` of a field with a ConstantValue attribute (JVM specification 4.7.2), else ""."""
    raw = next((value for name, value in attributes if name == "ConstantValue" and len(value) == 2), None)
    if raw is None:
        return ""
    tag, value = klass.pool.get(struct.unpack(">H", raw)[0], (0, b""))
    if tag == 3 and len(value) == 4:
        number = struct.unpack(">i", value)[0]
        shown = ("true" if number else "false") if descriptor == "Z" else str(number)
    elif tag == 5 and len(value) == 8:
        shown = str(struct.unpack(">q", value)[0])
    elif tag == 4 and len(value) == 4:
        shown = _float32(value)
    elif tag == 6 and len(value) == 8:
        shown = repr(struct.unpack(">d", value)[0])
    elif tag == 8 and len(value) == 2:
        shown = json.dumps(klass.utf8(struct.unpack(">H", value)[0]), ensure_ascii=False)
    else:
        return ""
    return f" = {shown}"


def _method(flags: int, name: str, descriptor: str, owner: str, throws: list[str]) -> str:
    params, _, result = descriptor[1:].partition(")")
    shown = owner.rsplit(".", 1)[-1] if name == "<init>" else name
    kind = "" if name == "<init>" else f"{_types(result)[0]} " if result else ""
    modifiers = " ".join(filter(None, (_modifiers(flags), "synchronized" if flags & _SYNCHRONIZED else "")))
    clause = f" throws {', '.join(throws)}" if throws else ""
    return f"{' '.join(filter(None, (modifiers, kind + shown)))}({', '.join(_types(params))}){clause};"


def _throws(klass: _ClassFile, attributes: list[tuple[str, bytes]]) -> list[str]:
    """The exceptions a method declares (its Exceptions attribute)."""
    table = next((value for name, value in attributes if name == "Exceptions" and len(value) >= 2), b"")
    count = struct.unpack_from(">H", table)[0] if table else 0
    return [klass.class_name(struct.unpack_from(">H", table, 2 + 2 * i)[0]) for i in range(count)
            if 2 + 2 * i + 2 <= len(table)]


def prepare_class(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if not data.startswith(MAGIC):
        raise PreparationError("not a Java class file")
    try:
        klass = _ClassFile(data)
        flags, this, parent = klass.u2(), klass.class_name(klass.u2()), klass.class_name(klass.u2())
        interfaces = [klass.class_name(klass.u2()) for _ in range(klass.u2())]
        fields, methods, attributes = klass.members(), klass.members(), klass.attributes()
    except (struct.error, IndexError, ValueError) as err:
        raise PreparationError(f"not a readable Java class file: {err}") from None
    kind = "interface" if flags & 0x0200 else "class"
    head = " ".join(filter(None, (_modifiers(flags & ~0x0020), kind, this,
                                  f"extends {parent}" if parent and parent != "java.lang.Object" else "",
                                  f"implements {', '.join(interfaces)}" if interfaces else "")))
    package, _, simple = this.rpartition(".")
    lines = [f"package {package};"] if package else []
    lines.append(head + " {")
    lines += [f"    {' '.join(filter(None, (_modifiers(f), _types(d)[0] if d else '', n)))}{_constant(klass, d, a)};"
              for f, n, d, a in fields if not f & 0x1000]  # synthetic members are the compiler's
    lines += [f"    {_method(f, n, d, this, _throws(klass, a))}" for f, n, d, a in methods
              if not f & 0x1000 and n != "<clinit>"]
    lines.append("}")
    source = next((v for n, v in attributes if n == "SourceFile" and len(v) == 2), None)
    source_file = klass.utf8(struct.unpack(">H", source)[0]) if source else ""
    return Prepared(title=this, content="\n".join(lines), headlines=[simple] if simple else [],
                    fields={"java_package": package, "source_file": source_file})
