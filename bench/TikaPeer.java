// The peer of bench/tika_compare.py: Apache Tika's AutoDetectParser over a list of files, as tika-app's
// text mode reads them (BodyContentHandler(-1): no write limit; embedded documents recursed by handing
// the parser itself to the ParseContext). OCR (tesseract, as beamtrawl's ocr preparator step) runs when the
// fifth argument is "ocr" and is skipped otherwise; bench/tika_compare.py sets beamtrawl's ocr.enabled to match.
// Usage: java TikaPeer THREADS LIST OUT_DIR DEADLINE_SECONDS [ocr|no-ocr].
// For line N of LIST it writes OUT_DIR/N.txt (the text) and OUT_DIR/N.type (Tika's Content-Type).
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.tika.io.TikaInputStream;
import org.apache.tika.metadata.Metadata;
import org.apache.tika.parser.AutoDetectParser;
import org.apache.tika.parser.ParseContext;
import org.apache.tika.parser.Parser;
import org.apache.tika.parser.ocr.TesseractOCRConfig;
import org.apache.tika.sax.BodyContentHandler;

public class TikaPeer {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        List<String> files = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        Path out = Paths.get(args[2]);
        boolean skipOcr = args.length < 5 || !args[4].equals("ocr");
        AutoDetectParser parser = new AutoDetectParser();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        for (int i = 0; i < files.size(); i++) {
            final int n = i;
            pool.submit(() -> {
                BodyContentHandler handler = new BodyContentHandler(-1);
                Metadata metadata = new Metadata();
                ParseContext context = new ParseContext();
                context.set(Parser.class, parser);
                TesseractOCRConfig ocr = new TesseractOCRConfig();
                ocr.setSkipOcr(skipOcr);
                context.set(TesseractOCRConfig.class, ocr);
                try (InputStream in = TikaInputStream.get(Paths.get(files.get(n)))) {
                    parser.parse(in, handler, metadata, context);
                } catch (Throwable failure) {
                    // what was read before the failure is kept, as tika-app prints it
                }
                String type = metadata.get("Content-Type");
                try {
                    Files.writeString(out.resolve(n + ".txt"), handler.toString(), StandardCharsets.UTF_8);
                    Files.writeString(out.resolve(n + ".type"), type == null ? "" : type, StandardCharsets.UTF_8);
                } catch (Exception ignored) {
                    // a file that cannot be written counts as not read
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(Long.parseLong(args[3]), TimeUnit.SECONDS);
        System.exit(0);  // a parser still running past the deadline is not waited for
    }
}
