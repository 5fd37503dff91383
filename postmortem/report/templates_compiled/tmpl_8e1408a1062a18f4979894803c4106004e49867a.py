from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_hang.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_hang = resolve('hang')
    pass
    yield '<section id="hang" class="card" aria-labelledby="hang-title">\n  <h2 id="hang-title">Collectives and stacks by rank</h2>\n'
    for l_1_grid in environment.getattr((undefined(name='hang') if l_0_hang is missing else l_0_hang), 'grids'):
        _loop_vars = {}
        pass
        yield '  <h3>'
        yield escape(environment.finalize(environment.getattr(l_1_grid, 'title')))
        yield '</h3>\n  <p class="muted">'
        yield escape(environment.finalize(environment.getattr(l_1_grid, 'summary')))
        yield '</p>\n  <div class="grid-wrap">\n  <table class="frgrid">\n    <thead><tr><th>rank</th>'
        for l_2_col in environment.getattr(l_1_grid, 'columns'):
            _loop_vars = {}
            pass
            yield '<th>'
            yield escape(environment.finalize(l_2_col))
            yield '</th>'
        l_2_col = missing
        yield '<th></th></tr></thead>\n    <tbody>\n'
        for l_2_row in environment.getattr(l_1_grid, 'rows'):
            _loop_vars = {}
            pass
            yield '    <tr'
            if environment.getattr(l_2_row, 'note'):
                pass
                yield ' class="odd-one"'
            yield '><th>'
            yield escape(environment.finalize(environment.getattr(l_2_row, 'rank')))
            yield '</th>\n'
            for l_3_cell in environment.getattr(l_2_row, 'cells'):
                _loop_vars = {}
                pass
                yield '<td class="st st-'
                yield escape(environment.finalize(environment.getattr(l_3_cell, 'state')))
                yield '" title="'
                yield escape(environment.finalize(environment.getattr(l_3_cell, 'title')))
                yield '">'
                yield escape(environment.finalize(environment.getattr(l_3_cell, 'label')))
                yield '</td>'
            l_3_cell = missing
            yield '      <td class="muted">'
            yield escape(environment.finalize(environment.getattr(l_2_row, 'note')))
            yield '</td></tr>\n'
        l_2_row = missing
        yield '    </tbody>\n  </table>\n  </div>\n'
        if environment.getattr(l_1_grid, 'hidden_ranks'):
            pass
            yield '<p class="muted">… '
            yield escape(environment.finalize(environment.getattr(l_1_grid, 'hidden_ranks')))
            yield ' more ranks like the ones shown</p>'
    l_1_grid = missing
    if environment.getattr((undefined(name='hang') if l_0_hang is missing else l_0_hang), 'grids'):
        pass
        yield '<p class="legend muted"><span class="st st-completed">done</span> <span class="st st-started">started</span> <span class="st st-waiting">waiting</span> <span class="st st-not-arrived">never arrived</span> <span class="st st-mismatch">different call</span> <span class="st st-no-dump">no dump</span> <span class="st st-before-window">before the dump\'s window</span></p>'
    if environment.getattr((undefined(name='hang') if l_0_hang is missing else l_0_hang), 'stack_lines'):
        pass
        yield '  <h3>Where each rank\'s main thread stood</h3>\n  <ul class="stack-groups">\n'
        for l_1_s in environment.getattr((undefined(name='hang') if l_0_hang is missing else l_0_hang), 'stack_lines'):
            _loop_vars = {}
            pass
            yield '<li><b>'
            yield escape(environment.finalize(('rank' if (environment.getattr(l_1_s, 'count') == 1) else markup_join((environment.getattr(l_1_s, 'count'), ' ranks', )))))
            yield ' '
            yield escape(environment.finalize(environment.getattr(l_1_s, 'ranks')))
            yield '</b> in <code>'
            yield escape(environment.finalize(environment.getattr(l_1_s, 'where')))
            yield '</code> <span class="muted">('
            yield escape(environment.finalize(environment.getattr(l_1_s, 'activity')))
            yield '; '
            yield escape(environment.finalize(environment.getattr(l_1_s, 'origin')))
            yield ' '
            yield escape(environment.finalize(environment.getattr(l_1_s, 'ref')))
            yield ')</span></li>'
        l_1_s = missing
        yield '  </ul>\n'
    for l_1_n in environment.getattr((undefined(name='hang') if l_0_hang is missing else l_0_hang), 'notes'):
        _loop_vars = {}
        pass
        yield '<p class="note">'
        yield escape(environment.finalize(l_1_n))
        yield '</p>'
    l_1_n = missing
    yield '</section>'

blocks = {}
debug_info = '3=13&4=17&5=19&8=21&10=29&11=33&12=39&13=51&18=55&20=61&21=64&24=67&27=85'