// What the scripts here share: their flags, JSON lines on stdout, errors as text.
'use strict'

// --name value pairs -> { name: value }
function args (argv) {
  const out = {}
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad arguments: ${argv.join(' ')}`)
    out[argv[i].slice(2)] = argv[i + 1]
  }
  return out
}

function emit (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function errorText (e) {
  return e && e.message ? e.message : String(e)
}

module.exports = { args, emit, errorText }
