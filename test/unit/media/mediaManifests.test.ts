// Reading adaptive streams' manifests (src/media/): which rendition is kept, what each manifest lists to fetch.
import { describe, expect, it } from "vitest";
import { listDash } from "../../../src/media/dashManifest.js";
import { listHls } from "../../../src/media/hlsPlaylist.js";
import { manifestFormat } from "../../../src/media/manifestFormat.js";
import { keepOneRendition } from "../../../src/media/renditionChoice.js";

const BASE = "http://127.0.0.1:9/media/";
const text = (s: string) => new TextEncoder().encode(s);

const MASTER = `#EXTM3U
#EXT-X-VERSION:7
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=YES,AUTOSELECT=YES,LANGUAGE="en",URI="audio/en.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="fr",LANGUAGE="fr",URI="audio/fr.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="en",DEFAULT=YES,URI="subs/en.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="unused",NAME="x",URI="audio/unused.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=290400,RESOLUTION=320x180,AUDIO="aud",SUBTITLES="subs"
v180/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=730400,RESOLUTION=640x360,AUDIO="aud",SUBTITLES="subs"
v360/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=4000000,RESOLUTION=1920x1080,AUDIO="aud",SUBTITLES="subs"
v1080/index.m3u8
`;

const MEDIA = `#EXTM3U
#EXT-X-TARGETDURATION:2
#EXT-X-MAP:URI="init.mp4"
#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k1"
#EXTINF:2.0,
seg0.m4s
#EXTINF:2.0,
seg1.m4s
#EXT-X-KEY:METHOD=NONE
#EXTINF:2.0,
seg2.m4s
#EXT-X-ENDLIST
`;

const MPD = `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="PT6.0S" minBufferTime="PT4.0S">
  <Period id="0" start="PT0.0S">
    <AdaptationSet id="0" contentType="video">
      <Representation id="0" mimeType="video/mp4" codecs="avc1.42c00d" bandwidth="200000" width="320" height="180">
        <SegmentTemplate timescale="10240" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1">
          <SegmentTimeline><S t="0" d="20480" r="2" /></SegmentTimeline>
        </SegmentTemplate>
      </Representation>
      <Representation id="1" mimeType="video/mp4" codecs="avc1.42c016" bandwidth="600000" width="640" height="360">
        <SegmentTemplate timescale="10240" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1">
          <SegmentTimeline><S t="0" d="20480" r="2" /></SegmentTimeline>
        </SegmentTemplate>
      </Representation>
    </AdaptationSet>
    <AdaptationSet id="1" contentType="audio">
      <Representation id="2" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="64000" audioSamplingRate="44100">
        <SegmentTemplate timescale="44100" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1" duration="88200" />
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>
`;

describe("manifestFormat", () => {
  it("knows HLS and DASH by Content-Type, or by extension and first bytes", () => {
    expect(manifestFormat(`${BASE}a`, "application/vnd.apple.mpegurl", text(MASTER))).toBe("hls");
    expect(manifestFormat(`${BASE}a.m3u8?x=1`, "text/plain", text(MEDIA))).toBe("hls");
    expect(manifestFormat(`${BASE}a.mpd`, "application/octet-stream", text(MPD))).toBe("dash");
    expect(manifestFormat(`${BASE}a`, "application/dash+xml", text(MPD))).toBe("dash");
    // A playlist type whose body is no playlist, a .m3u8 name on HTML, an MPD named otherwise: none.
    expect(manifestFormat(`${BASE}a`, "application/vnd.apple.mpegurl", text("<html>"))).toBeNull();
    expect(manifestFormat(`${BASE}a.m3u8`, "text/html", text("<html>"))).toBeNull();
    expect(manifestFormat(`${BASE}a.xml`, "text/xml", text(MPD))).toBeNull();
    expect(manifestFormat(`${BASE}a.m3u8`, "", new Uint8Array(0))).toBeNull();
  });
});

describe("keepOneRendition", () => {
  it("keeps the HLS variant replay asks for (largest up to 860x480), every rendition group line, and says the limits", async () => {
    const kept = await keepOneRendition("hls", MASTER);
    expect(kept?.limits).toEqual({ maxRes: 860 * 480, maxBand: 1_000_000, rewritten: 1 });
    const variants = kept!.text.split("\n").filter((line) => line.startsWith("v"));
    expect(variants).toEqual(["v360/index.m3u8"]);
    expect(kept!.text.match(/#EXT-X-MEDIA:/g)).toHaveLength(4);
  });

  it("keeps one DASH representation per adaptation set", async () => {
    const kept = await keepOneRendition("dash", MPD);
    expect(kept?.text.match(/<Representation /g)).toHaveLength(2);
    expect(kept?.text).toContain('width="640"');
    expect(kept?.text).not.toContain('width="320"');
  });

  it("leaves a manifest that offers no choice as served", async () => {
    expect(await keepOneRendition("hls", MEDIA)).toBeNull();
    expect(await keepOneRendition("hls", MASTER.replace(/#EXT-X-STREAM-INF:BANDWIDTH=(290400|4000000)[^\n]*\n[^\n]*\n/g, ""))).toBeNull();
    expect(await keepOneRendition("dash", MPD.replace(/<Representation id="0"[\s\S]*?<\/Representation>/, ""))).toBeNull();
  });
});

describe("listHls", () => {
  it("lists a cut master's variant and the renditions of its groups, resolved", async () => {
    const kept = await keepOneRendition("hls", MASTER);
    const listing = await listHls(kept!.text, `${BASE}master.m3u8`);
    expect(listing.rendition).toEqual({ width: 640, height: 360, bandwidth: 730400 });
    expect(listing.playlists.sort()).toEqual([`${BASE}audio/en.m3u8`, `${BASE}audio/fr.m3u8`, `${BASE}subs/en.m3u8`, `${BASE}v360/index.m3u8`].sort());
    expect(listing.files).toEqual([]);
  });

  it("lists a media playlist's init segment, keys and segments once each, in order", async () => {
    const listing = await listHls(MEDIA, `${BASE}v360/index.m3u8`);
    expect(listing.files).toEqual(["https://keys.example/k1", `${BASE}v360/init.mp4`, `${BASE}v360/seg0.m4s`, `${BASE}v360/seg1.m4s`, `${BASE}v360/seg2.m4s`]);
    expect(listing.segments).toEqual([`${BASE}v360/seg0.m4s`, `${BASE}v360/seg1.m4s`, `${BASE}v360/seg2.m4s`]);
    expect(listing.live).toBe(false);
    expect(listing.encryption).toEqual(["AES-128"]);
  });

  it("tells a live playlist and a DRM key, which is never a file", async () => {
    const live = MEDIA.replace("#EXT-X-ENDLIST\n", "").replace(/#EXT-X-KEY:METHOD=AES-128[^\n]*/, '#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key-1",KEYFORMAT="com.apple.streamingkeydelivery"');
    const listing = await listHls(live, `${BASE}live.m3u8`);
    expect(listing.live).toBe(true);
    expect(listing.encryption).toEqual(["SAMPLE-AES com.apple.streamingkeydelivery"]);
    expect(listing.files.some((f) => f.startsWith("skd:"))).toBe(false);
    expect(listing.files).toHaveLength(4);
  });
});

describe("listDash", () => {
  it("expands templates and timelines of the kept representations into every init and media segment", async () => {
    const kept = await keepOneRendition("dash", MPD);
    const listing = await listDash(kept!.text, `${BASE}stream.mpd`);
    expect(listing.rendition).toEqual({ width: 640, height: 360, bandwidth: 600000 });
    expect(listing.files.sort()).toEqual([
      "init-1.m4s", "chunk-1-00001.m4s", "chunk-1-00002.m4s", "chunk-1-00003.m4s",
      "init-2.m4s", "chunk-2-00001.m4s", "chunk-2-00002.m4s", "chunk-2-00003.m4s",
    ].map((f) => BASE + f).sort());
    expect(listing.segments).toHaveLength(6);
    expect(listing.live).toBe(false);
  });

  it("tells a dynamic MPD (live) and content protection", async () => {
    const live = MPD.replace('type="static"', 'type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z"')
      .replace(/<Representation id="2"[\s\S]*?<\/Representation>/, "")
      .replace('<AdaptationSet id="0" contentType="video">', '<AdaptationSet id="0" contentType="video"><ContentProtection schemeIdUri="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" value="Widevine"/>');
    const listing = await listDash(live, `${BASE}live.mpd`);
    expect(listing.live).toBe(true);
    expect(listing.encryption).toContain("com.widevine.alpha");
  });

  it("refuses to list what would be millions of segments (mpd-parser would abort Node), with a reason", async () => {
    // A live template stream begun in 1970: one segment per 2 s since then.
    const since1970 = MPD.replace('type="static"', 'type="dynamic" availabilityStartTime="1970-01-01T00:00:00Z"');
    await expect(listDash(since1970, `${BASE}live.mpd`)).rejects.toThrow(/unbounded number of segments/);
    // A static one said to last a century, a timeline repeated a billion times, or "until the end".
    await expect(listDash(MPD.replace("PT6.0S", "P36500D"), `${BASE}a.mpd`)).rejects.toThrow(/about \d+ segments/);
    await expect(listDash(MPD.replace(/r="2"/g, 'r="1000000000"'), `${BASE}a.mpd`)).rejects.toThrow(/segments/);
    await expect(listDash(MPD.replace(/r="2"/g, 'r="-1"'), `${BASE}a.mpd`)).rejects.toThrow(/unbounded/);
  });
});
