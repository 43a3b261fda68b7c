// The `debug` library as puppeteer-core gets it in the bundles: one logger per namespace, made once. puppeteer asks
// `debug` for a new logger on every protocol message it sends or receives, and making one (its namespace matched
// against DEBUG, its stream asked whether it is a terminal) costs some 15-45 µs: a thousand messages a page.
import createDebug from "debug";

const loggers = new Map();

function cachedDebug(namespace) {
  let logger = loggers.get(namespace);
  if (logger === undefined) {
    logger = createDebug(namespace);
    loggers.set(namespace, logger);
  }
  return logger;
}

// Everything else (enable, disable, enabled, formatters...) is the library's own.
export default new Proxy(cachedDebug, { get: (target, property) => (property in target ? target[property] : createDebug[property]) });
