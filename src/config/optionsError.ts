/** A bad flag or config value: the crawl says which, in one line, and exits with the usage code. */
export class OptionsError extends Error {}
