"""A corpus with every format the preparators read, made with the real libraries (reportlab, python-docx,
openpyxl, python-pptx, the email package, zipfile/tarfile, sox and mutagen) plus the LibreOffice samples
in tests/data/samples. Each document carries a known title and a known phrase. Used by the end-to-end
format tests and by bench/prepare_bench.py (``variant`` makes every copy's words its own)."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"


@dataclass(frozen=True)
class Doc:
    name: str  # file name, with its usual extension
    family: str  # for the benchmark's figures
    data: bytes
    title: str
    phrase: str  # a phrase the content must hold


def _pdf(title: str, phrase: str) -> bytes:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    page = canvas.Canvas(buffer)
    page.setTitle(title)
    page.setAuthor("Ada Lovelace")
    for line in range(30):
        page.drawString(72, 760 - 20 * line, f"{phrase} line {line}" if line else phrase)
    page.showPage()
    page.save()
    return buffer.getvalue()


def _docx(title: str, phrase: str) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.add_heading("Section one", 1)
    for _ in range(10):
        document.add_paragraph(f"{phrase}. Some more words to make a page of it.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _xlsx(title: str, phrase: str) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.properties.title = title
    sheet = workbook.active
    sheet.append(["note", "amount"])
    for row in range(40):
        sheet.append([phrase if row == 0 else f"row {row}", row * 1.5])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _pptx(title: str, phrase: str) -> bytes:
    import pptx

    presentation = pptx.Presentation()
    presentation.core_properties.title = title
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Agenda"
    slide.placeholders[1].text = phrase
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def _html(title: str, phrase: str) -> bytes:
    paragraphs = "".join(f"<p>{phrase}. Paragraph {i} of an article long enough to be main text for "
                         f"trafilatura, with a few more words in it.</p>" for i in range(8))
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
            f"<article><h1>{title}</h1>{paragraphs}</article></body></html>").encode()


def _xhtml(title: str, phrase: str) -> bytes:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>{title}</title></head><body><h1>{title}</h1><p>{phrase}.</p></body></html>").encode()


def _rtf(title: str, phrase: str) -> bytes:
    return ("{\\rtf1\\ansi\\ansicpg1252{\\info{\\title " + title + "}}\\f0\\pard " + phrase
            + " with caf\\'e9 cr\\'e8me.\\par}").encode("ascii")


def _mail(title: str, phrase: str, attachment_phrase: str) -> bytes:
    message = EmailMessage()
    message["From"] = "Ada <ada@example.org>"
    message["To"] = "bob@example.org"
    message["Subject"] = title
    message.set_content(f"{phrase}.\n")
    message.add_alternative(f"<html><body><p>{phrase}.</p></body></html>", subtype="html")
    message.add_attachment(_pdf("Attached", attachment_phrase), maintype="application", subtype="pdf",
                           filename="attached.pdf")
    return bytes(message)


def _zip(entries: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar_gz(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


_EPUB_CONTAINER = b"""<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def _epub(title: str, phrase: str) -> bytes:
    opf = f"""<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:x</dc:identifier>
    <dc:title>{title}</dc:title><dc:creator>Ada Lovelace</dc:creator></metadata>
  <manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>
  <spine><itemref idref="c1"/></spine>
</package>""".encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        # members in an order libmagic does not recognise: the container's members must decide
        archive.writestr("META-INF/container.xml", _EPUB_CONTAINER)
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr("OEBPS/c1.xhtml", _xhtml("Chapter", phrase))
    return buffer.getvalue()


class _Audio:
    """Tones made once by sox, tagged per copy by mutagen."""

    def __init__(self):
        self.tones: dict[str, bytes] = {}

    def tone(self, suffix: str) -> bytes:
        if suffix not in self.tones:
            assert shutil.which("sox"), "the format corpus needs Debian's sox and libsox-fmt-mp3"
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"tone.{suffix}"
                subprocess.run(["sox", "-n", "--comment", "", "-r", "8000", "-c", "1", str(path),
                                "synth", "1.5", "sine", "440"], check=True, capture_output=True)
                self.tones[suffix] = path.read_bytes()
        return self.tones[suffix]

    def tagged(self, suffix: str, artist: str, title: str, album: str) -> bytes:
        import mutagen
        from mutagen.easyid3 import EasyID3

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"tagged.{suffix}"
            path.write_bytes(self.tone(suffix))
            if suffix == "mp3":
                tags = EasyID3()
                tags.update({"artist": artist, "title": title, "album": album})
                tags.save(path)
            else:
                audio = mutagen.File(path)
                audio["artist"], audio["title"], audio["album"] = artist, title, album
                audio.save()
            return path.read_bytes()


def documents(variant: int = 0, audio: _Audio | None = None, samples: bool = True) -> list[Doc]:
    """One document of every format; ``variant`` changes their titles and phrases."""
    v = f"v{variant}"
    audio = audio or _Audio()
    docs = [
        Doc(f"page-{v}.html", "html", _html(f"Harbour news {v}", f"the lighthouse keeper {v} waved"),
            f"Harbour news {v}", f"lighthouse keeper {v} waved"),
        Doc(f"page-{v}.xhtml", "html", _xhtml(f"Strict page {v}", f"xhtml kingfisher {v} dives"),
            f"Strict page {v}", f"kingfisher {v} dives"),
        Doc(f"notes-{v}.txt", "text", f"plain notes: the gannet {v} plunges. Grüße.\n".encode("latin-1"),
            "", f"gannet {v} plunges. Grüße"),
        Doc(f"readme-{v}.md", "text", f"# Markdown title {v}\n\nThe puffin {v} nests here.\n".encode(),
            f"Markdown title {v}", f"puffin {v} nests"),
        Doc(f"tool-{v}.py", "code",
            f'def cormorant():\n    """The cormorant {v} dries its wings."""\n'.encode(), f"module tool-{v}",
            f"cormorant {v} dries"),
        Doc(f"data-{v}.xml", "xml",
            f'<?xml version="1.0"?>\n<doc><title>XML title {v}</title><p>the heron {v} waits</p></doc>'
            .encode(),
            f"XML title {v}", f"heron {v} waits"),
        Doc(f"manual-{v}.pdf", "pdf", _pdf(f"PDF manual {v}", f"the albatross {v} glides"),
            f"PDF manual {v}", f"albatross {v} glides"),
        Doc(f"report-{v}.docx", "office", _docx(f"Word report {v}", f"the osprey {v} hunts"),
            f"Word report {v}", f"osprey {v} hunts"),
        Doc(f"sheet-{v}.xlsx", "office", _xlsx(f"Excel sheet {v}", f"petrel {v} count"),
            f"Excel sheet {v}", f"petrel {v} count"),
        Doc(f"slides-{v}.pptx", "office", _pptx(f"Slides {v}", f"the tern {v} migrates"),
            f"Slides {v}", f"tern {v} migrates"),
        Doc(f"letter-{v}.rtf", "rtf", _rtf(f"RTF letter {v}", f"the shearwater {v} skims"),
            f"RTF letter {v}", f"shearwater {v} skims with café crème"),
        Doc(f"mail-{v}.eml", "mail",
            _mail(f"Seabird survey {v}", f"the skua {v} chases", f"guillemot {v} dives"),
            f"Seabird survey {v} from Ada <ada@example.org>", f"guillemot {v} dives"),
        Doc(f"bundle-{v}.zip", "archive",
            _zip({f"inner/auk-{v}.txt": f"the little auk {v} swims".encode(),
                  f"docs/report-{v}.docx": _docx("Inner", f"inner eider {v} rests")}),
            "", f"eider {v} rests"),
        Doc(f"lib-{v}.jar", "archive", _zip({"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\n",
                                             f"org/birds/Fulmar{v}.class": b"\xca\xfe\xba\xbe"}),
            "", f"Fulmar{v}"),
        Doc(f"backup-{v}.tar.gz", "archive", _tar_gz({f"log/loon-{v}.txt": f"the loon {v} calls".encode()}),
            "", f"loon {v} calls"),
        Doc(f"book-{v}.epub", "epub", _epub(f"EPUB book {v}", f"the grebe {v} dances"),
            f"EPUB book {v}", f"grebe {v} dances"),
        Doc(f"song-{v}.mp3", "audio", audio.tagged("mp3", "Gull Choir", f"Tide song {v}", "Coast"),
            f"Gull Choir - Tide song {v}", "Coast"),
        Doc(f"song-{v}.ogg", "audio", audio.tagged("ogg", "Gull Choir", f"Wave song {v}", "Coast"),
            f"Gull Choir - Wave song {v}", "Coast"),
        Doc(f"song-{v}.flac", "audio", audio.tagged("flac", "Gull Choir", f"Surf song {v}", "Coast"),
            f"Gull Choir - Surf song {v}", "Coast"),
    ]
    if samples:
        docs += sample_documents(v)
    return docs


def sample_documents(v: str = "") -> list[Doc]:
    """The files LibreOffice made once (tests/data/samples), under new names."""
    doc = [("doc", "legacy", "Legacy Word Sample", "quick brown fox consults the analytical engine"),
           ("xls", "legacy", "Legacy Excel Sample", "Lighthouse keeper wages 1200"),
           ("ppt", "legacy", "Legacy PowerPoint Sample", "Foghorn maintenance is overdue"),
           ("odt", "odf", "Legacy Word Sample", "quick brown fox consults the analytical engine"),
           ("ods", "odf", "Legacy Excel Sample", "Lighthouse keeper wages 1200"),
           ("odp", "odf", "Legacy PowerPoint Sample", "Foghorn maintenance is overdue"),
           ("rtf", "rtf", "Legacy Word Sample", "quick brown fox consults the analytical engine"),
           ("pdf", "pdf", "Legacy Word Sample", "quick brown fox consults the analytical engine")]
    suffix = f"-{v}" if v else ""
    return [Doc(f"libreoffice{suffix}.{ext}", family, (SAMPLES / f"libreoffice.{ext}").read_bytes(), title,
                phrase) for ext, family, title, phrase in doc]


def write(root: Path, docs: list[Doc]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (root / doc.name).write_bytes(doc.data)
