// Words for the POSIX shell (hook commands agents run, resume commands shown to the user).

/** Quotes one word for the POSIX shell that agents run hook commands with. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
